"""The static token file (kube-apiserver's --token-auth-file CSV) and the identities
`kubera up` issues."""

from __future__ import annotations

import stat

import pytest

from services.auth import AUTHENTICATED, MASTERS, NODES, node_names
from services.auth.tokens import (
    TokenAuthenticator,
    TokenFileError,
    issue_tokens,
    parse_token_file,
    write_private,
)


@pytest.mark.parametrize(
    ("line", "name", "uid", "groups"),
    [
        ("tok,alice,1", "alice", "1", (AUTHENTICATED,)),
        ('tok,bob,2,"g1,g2"', "bob", "2", ("g1", "g2", AUTHENTICATED)),
        ('tok, carol , 3 ,"g1, g2,"', "carol", "3", ("g1", "g2", AUTHENTICATED)),
        ("tok,dave,4,,extra", "dave", "4", (AUTHENTICATED,)),
    ],
)
def test_token_file_line_gives_user_uid_and_groups(
    line: str, name: str, uid: str, groups: tuple[str, ...]
) -> None:
    user = parse_token_file(line)["tok"]
    assert (user.name, user.uid, user.groups) == (name, uid, groups)


def test_token_file_needs_three_columns() -> None:
    with pytest.raises(TokenFileError, match="at least 3 columns"):
        parse_token_file("tok,alice\n")


def test_token_file_skips_blank_lines_and_empty_tokens_and_later_duplicate_wins() -> None:
    users = parse_token_file("\n,nobody,0\na,first,1\na,second,2\n")
    assert list(users) == ["a"] and users["a"].name == "second"


def test_unknown_and_empty_tokens_authenticate_nobody() -> None:
    authn = TokenAuthenticator.from_text("good,alice,1\n")
    assert authn.authenticate("good") is not None
    assert authn.authenticate("bad") is None
    assert authn.authenticate("") is None


def test_issued_identities_round_trip_through_the_file() -> None:
    issued = issue_tokens(
        schedulers=["scheduler", "scheduler-1"],
        controller_managers=["controller-manager"],
        pools={"pool-0": ["n1", "n2"], "pool-1": ["n3"]},
    )
    authn = TokenAuthenticator.from_text(issued.csv())
    admin = authn.authenticate(issued.admin)
    assert admin is not None and MASTERS in admin.groups
    s0, s1 = (authn.authenticate(issued.token_for(n)) for n in ("scheduler", "scheduler-1"))
    assert s0 is not None and s1 is not None
    assert s0.name == s1.name == "system:kube-scheduler" and s0.uid != s1.uid
    pool = authn.authenticate(issued.token_for("pool-0"))
    assert pool is not None and NODES in pool.groups
    assert node_names(pool) == {"n1", "n2"}
    node = authn.authenticate(issued.token_for("node:n3"))
    assert node is not None and node.name == "system:node:n3" and node_names(node) == {"n3"}
    # every token distinct
    assert len(set(issued.by_component.values())) == len(issued.by_component)


def test_private_files_are_0600(tmp_path) -> None:
    p = tmp_path / "tokens.csv"
    p.write_text("old")
    p.chmod(0o644)
    write_private(p, "secret")
    assert stat.S_IMODE(p.stat().st_mode) == 0o600 and p.read_text() == "secret"
