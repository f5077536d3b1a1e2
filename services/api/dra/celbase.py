"""The Kubernetes CEL base environment's libraries a DRA selector may use besides quantity
and semver (celkube.py): IP and CIDR (upstream k8s.io/apiserver/pkg/cel/library ip.go,
cidr.go), regex find/findAll (regex.go) and lists (lists.go), for the CEL C++ runtime.
`matches`, string `format` and the strings extension come with the runtime (cel.py).

    ip(s) isIP(s) ip.isCanonical(s)      an address; IPv4-mapped IPv6 and zones refused
    <ip>.family() isUnspecified() isLoopback() isLinkLocalMulticast()
        isLinkLocalUnicast() isGlobalUnicast()                       netip's rules
    cidr(s) isCIDR(s) <cidr>.containsIP(ip|s) containsCIDR(cidr|s) ip() masked()
        prefixLength()
    string(ip) string(cidr)              the canonical forms
    <s>.find(re) <s>.findAll(re[, n])    the first match ("" if none), the matches
    <list>.isSorted() sum() min() max()

The two network types are messages of celkube.POOL (net.IP, net.CIDR). The C++ runtime
keys an implementation by its arguments' kinds, and both types are messages, so
string(ip) and string(cidr) cannot both be implemented: the checker's extension
(CHECK_EXTENSION) declares both, the runtime's (RUN_EXTENSION) one implementation that
tells them apart (cel.py checks with the one and runs with the other).

Differences: regular expressions are Python's `re`, not RE2 (the same for the usual
syntax; RE2's refusals of backreferences and lookaround are not reproduced). The lists
library's indexOf and lastIndexOf are missing: the strings extension owns those names and
the runtime takes no second declaration of a function. Not provided: the URL library
(url(), getHost(), ...), sets, and the named formats (format.dns1123Label(), ...).
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any, Final

from cel_expr_python import cel
from google.protobuf import message_factory

from services.api.dra.celkube import POOL

IPMessage: Final[Any] = message_factory.GetMessageClass(POOL.FindMessageTypeByName("net.IP"))
CIDRMessage: Final[Any] = message_factory.GetMessageClass(POOL.FindMessageTypeByName("net.CIDR"))
IP: Final = cel.Type("net.IP")
CIDR: Final = cel.Type("net.CIDR")

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Interface | ipaddress.IPv6Interface


# ---- ip and cidr --------------------------------------------------------------------------


def parse_ip(raw: str) -> Address:
    """upstream parseIPAddr: netip.ParseAddr, zones and IPv4-mapped IPv6 refused."""
    if "%" in raw and _address(raw.partition("%")[0]) is not None:
        raise ValueError(f'IP address "{raw}" with zone value is not allowed')
    addr = _address(raw)
    if addr is None:
        raise ValueError(
            f'IP Address "{raw}" parse error during conversion from string: '
            f'ParseAddr("{raw}"): unable to parse IP'
        )
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        raise ValueError(f'IPv4-mapped IPv6 address "{raw}" is not allowed')
    return addr


def _address(raw: str) -> Address | None:
    try:
        return ipaddress.ip_address(raw)
    except ValueError:
        return None


def parse_cidr(raw: str) -> Network:
    """upstream parseCIDR: netip.ParsePrefix (the address need not be masked)."""
    addr, slash, bits = raw.partition("/")
    if not slash or not bits.isascii() or not bits.isdigit() or (len(bits) > 1 and bits[0] == "0"):
        raise ValueError(f'CIDR "{raw}" parse error during conversion from string: bad prefix')
    if "%" in addr:
        raise ValueError(f'CIDR "{raw}" with zone value is not allowed')
    ip = _address(addr)
    if ip is None or int(bits) > ip.max_prefixlen:
        raise ValueError(f'CIDR "{raw}" parse error during conversion from string: bad address')
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        raise ValueError(f'IPv4-mapped IPv6 address "{raw}" is not allowed')
    return ipaddress.ip_interface(f"{ip}/{bits}")


def _ip(m: Any) -> Address:
    return ipaddress.ip_address(m.value)


def _cidr(m: Any) -> Network:
    return ipaddress.ip_interface(m.value)


def _ip_message(addr: Address) -> Any:
    return IPMessage(value=str(addr))


def _cidr_message(net: Network) -> Any:
    return CIDRMessage(value=f"{net.ip}/{net.network.prefixlen}")


def _ok(parse: Any, raw: str) -> bool:
    try:
        parse(raw)
    except ValueError:
        return False
    return True


def _is_global_unicast(a: Address) -> bool:
    """netip.Addr.IsGlobalUnicast: private and ULA addresses count as global."""
    if isinstance(a, ipaddress.IPv4Address) and int(a) in (0, 0xFFFFFFFF):
        return False
    return not (a.is_unspecified or a.is_loopback or a.is_multicast or a.is_link_local)


def _is_link_local_multicast(a: Address) -> bool:
    if isinstance(a, ipaddress.IPv4Address):
        return a in ipaddress.IPv4Network("224.0.0.0/24")
    return (int(a) >> 112) & 0xFF0F == 0xFF02


def _contains_cidr(c: Network, other: Network) -> bool:
    return c.network.prefixlen <= other.network.prefixlen and other.ip in c.network


def _to_string(m: Any) -> str:
    if isinstance(m, CIDRMessage):
        return str(m.value)
    if isinstance(m, IPMessage):
        return str(m.value)
    raise TypeError("no such overload")


def _network_functions(*, run: bool) -> list[Any]:
    ov = cel.Overload
    S, B, N = cel.Type.STRING, cel.Type.BOOL, cel.Type.INT
    member = {
        "family": lambda m: _ip(m).version,
        "isUnspecified": lambda m: _ip(m).is_unspecified,
        "isLoopback": lambda m: _ip(m).is_loopback,
        "isLinkLocalMulticast": lambda m: _is_link_local_multicast(_ip(m)),
        "isLinkLocalUnicast": lambda m: _ip(m).is_link_local,  # 169.254/16, fe80::/10
        "isGlobalUnicast": lambda m: _is_global_unicast(_ip(m)),
    }
    out = [
        cel.FunctionDecl(
            name,
            [ov(f"ip_{name}", N if name == "family" else B, [IP], is_member=True, impl=fn)],
        )
        for name, fn in member.items()
    ]
    strings = [ov("ip_to_string", S, [IP], impl=_to_string)]
    if not run:
        strings.append(ov("cidr_to_string", S, [CIDR]))
    out += [
        cel.FunctionDecl(
            "ip",
            [
                ov("string_to_ip", IP, [S], impl=lambda s: _ip_message(parse_ip(s))),
                ov("cidr_ip", IP, [CIDR], is_member=True, impl=lambda c: _ip_message(_cidr(c).ip)),
            ],
        ),
        cel.FunctionDecl("isIP", [ov("is_ip", B, [S], impl=lambda s: _ok(parse_ip, s))]),
        cel.FunctionDecl(
            "ip.isCanonical",
            [ov("ip_is_canonical", B, [S], impl=lambda s: str(parse_ip(s)) == s)],
        ),
        cel.FunctionDecl("string", strings),
        cel.FunctionDecl(
            "cidr", [ov("string_to_cidr", CIDR, [S], impl=lambda s: _cidr_message(parse_cidr(s)))]
        ),
        cel.FunctionDecl("isCIDR", [ov("is_cidr", B, [S], impl=lambda s: _ok(parse_cidr, s))]),
        cel.FunctionDecl(
            "containsIP",
            [
                ov(
                    "cidr_contains_ip_ip",
                    B,
                    [CIDR, IP],
                    True,
                    lambda c, i: _ip(i) in _cidr(c).network,
                ),
                ov(
                    "cidr_contains_ip_string",
                    B,
                    [CIDR, S],
                    True,
                    lambda c, s: parse_ip(s) in _cidr(c).network,
                ),
            ],
        ),
        cel.FunctionDecl(
            "containsCIDR",
            [
                ov(
                    "cidr_contains_cidr",
                    B,
                    [CIDR, CIDR],
                    True,
                    lambda c, o: _contains_cidr(_cidr(c), _cidr(o)),
                ),
                ov(
                    "cidr_contains_cidr_string",
                    B,
                    [CIDR, S],
                    True,
                    lambda c, s: _contains_cidr(_cidr(c), parse_cidr(s)),
                ),
            ],
        ),
        cel.FunctionDecl(
            "masked",
            [
                ov(
                    "cidr_masked",
                    CIDR,
                    [CIDR],
                    True,
                    lambda c: _cidr_message(ipaddress.ip_interface(_cidr(c).network)),
                )
            ],
        ),
        cel.FunctionDecl(
            "prefixLength",
            [ov("cidr_prefix_length", N, [CIDR], True, lambda c: _cidr(c).network.prefixlen)],
        ),
    ]
    return out


# ---- regex --------------------------------------------------------------------------------


def _compiled(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as err:
        raise ValueError(f"error parsing regexp: {err}") from None


def _find_all(s: str, pattern: str, limit: int = -1) -> list[str]:
    """Go's FindAllString(s, n): n < 0 all matches, else at most n."""
    if limit == 0:
        return []
    found = [m.group(0) for m in _compiled(pattern).finditer(s)]
    return found if limit < 0 else found[:limit]


def _regex_functions() -> list[Any]:
    ov = cel.Overload
    S, N = cel.Type.STRING, cel.Type.INT
    return [
        cel.FunctionDecl(
            "find",
            [
                ov(
                    "string_find_string",
                    S,
                    [S, S],
                    True,
                    lambda s, p: m.group(0) if (m := _compiled(p).search(s)) else "",
                )
            ],
        ),
        cel.FunctionDecl(
            "findAll",
            [
                ov("string_find_all_string", cel.Type.List(S), [S, S], True, _find_all),
                ov("string_find_all_string_int", cel.Type.List(S), [S, S, N], True, _find_all),
            ],
        ),
    ]


# ---- lists --------------------------------------------------------------------------------


def _comparable(items: list[Any]) -> list[Any]:
    if any(not isinstance(i, (bool, int, float, str, bytes)) for i in items):
        raise TypeError("no such overload")
    return items


def _sum(items: list[Any]) -> Any:
    _comparable(items)
    if not items:
        return 0
    total = items[0]
    for i in items[1:]:
        total = total + i
    return total


def _extreme(pick: Any) -> Any:
    def fn(items: list[Any]) -> Any:
        if not items:
            raise ValueError(f"{pick.__name__}(list) called on empty list")
        return pick(_comparable(items))

    return fn


def _list_functions() -> list[Any]:
    ov = cel.Overload
    L, D = cel.Type.List(cel.Type.DYN), cel.Type.DYN
    return [
        cel.FunctionDecl(
            "isSorted",
            [
                ov(
                    "list_is_sorted",
                    cel.Type.BOOL,
                    [L],
                    True,
                    lambda xs: _comparable(xs) == sorted(xs),
                )
            ],
        ),
        cel.FunctionDecl("sum", [ov("list_sum", D, [L], True, _sum)]),
        cel.FunctionDecl("min", [ov("list_min", D, [L], True, _extreme(min))]),
        cel.FunctionDecl("max", [ov("list_max", D, [L], True, _extreme(max))]),
    ]


#: The checker's and the runtime's declarations (see the module docstring).
CHECK_EXTENSION: Final = cel.CelExtension(
    "kubernetes.base", _network_functions(run=False) + _regex_functions() + _list_functions()
)
RUN_EXTENSION: Final = cel.CelExtension(
    "kubernetes.base", _network_functions(run=True) + _regex_functions() + _list_functions()
)
