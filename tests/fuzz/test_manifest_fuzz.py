"""The CLI's manifest decoder (kubera.cli.manifests parse + decode_all) under hypothesis, at a
small size: random YAML and JSON text, random documents of every kind, and the manifests
of examples/ bent by character edits (anchors, aliases, merge keys, tags, control
characters, huge numbers inserted). Every input decodes or ends in one CliError line;
no other exception escapes."""

from __future__ import annotations

from kubera.fuzz.manifests import DecoderTally, decode_text, fuzz_decoder


def test_every_manifest_decodes_or_ends_in_one_cli_error_line() -> None:
    tally = DecoderTally()
    fuzz_decoder(tally, 300, derandomize=True)
    print(tally.report())
    assert tally.tried >= 100
    assert not tally.failures, tally.report()


def test_the_harness_sees_an_escaping_exception() -> None:
    """The check can fail: text that is not a str is not a manifest the CLI can read."""
    tally = DecoderTally()
    decode_text(tally, "x.yaml", None)  # type: ignore[arg-type]
    assert tally.outcomes["failure"] == 1 and tally.failures
