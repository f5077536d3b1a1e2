"""Thin Ray shells around the plain asyncio components in services/."""
