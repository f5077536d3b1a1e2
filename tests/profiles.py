"""The hypothesis profiles of the suite, chosen by $HYPOTHESIS_PROFILE (tests/conftest.py loads
it before any test module is imported):

- `fast` (the default, `make test`): FAST_EXAMPLES examples a property, no deadline, so the
  suite stays quick as properties are added and a loaded machine does not fail a test on time.
- `deep` (`make test-deep`): hypothesis's own defaults (100 examples, its deadline), and each
  test that asks for more runs that many: the numbers the suite ran before the profiles.

A test that needs more examples than the default when run deep says so with
`@settings(max_examples=examples(300), ...)`; in the fast profile that is FAST_EXAMPLES."""

from __future__ import annotations

import os

from hypothesis import settings

FAST_EXAMPLES = 20
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "fast")

settings.register_profile("fast", max_examples=FAST_EXAMPLES, deadline=None)
settings.register_profile("deep")


def load() -> None:
    settings.load_profile(PROFILE)


def examples(deep: int) -> int:
    """A property's max_examples: `deep` under the deep profile, else the profile's own
    count (never more than `deep`)."""
    if PROFILE == "deep":
        return deep
    return min(deep, settings.get_profile(PROFILE).max_examples)
