"""The Kubernetes CEL base environment's libraries in DRA selectors (celbase.py): IP and
CIDR (upstream k8s.io/apiserver/pkg/cel/library ip.go, cidr.go: netip's parsing, zones and
IPv4-mapped IPv6 refused, canonical strings), regex find/findAll (regex.go) and lists
(lists.go), beside `matches` and string `format`, which the runtime brings. Each row is an
expression that must be true for a device, or its runtime error."""

from __future__ import annotations

import pytest

from services.api.dra import cel
from tests.builders import device

DRA = "dra.example.com"
DEV = device("nic-0", {"addr": "10.2.3.4", "mac": "ea:9f:1c:2d:3e:4f", "ports": "80,443"})

TRUE: dict[str, str] = {
    # ip
    "ip-family-4": 'ip("192.168.0.1").family() == 4',
    "ip-family-6": 'ip("2001:db8::68").family() == 6',
    "ip-equality": 'ip("2001:db8::68") == ip("2001:DB8::68")',
    "ip-string-is-canonical": 'string(ip("2001:DB8:0:0:0::68")) == "2001:db8::68"',
    "is-ip": 'isIP("1.2.3.4") && isIP("::1") && !isIP("1.2.3") && !isIP("::ffff:1.2.3.4")',
    "is-ip-no-zone": '!isIP("fe80::1%eth0")',
    "is-canonical": 'ip.isCanonical("127.0.0.1") && !ip.isCanonical("2001:DB8::68")',
    "unspecified": 'ip("0.0.0.0").isUnspecified() && ip("::").isUnspecified()',
    "loopback": 'ip("127.0.0.1").isLoopback() && ip("::1").isLoopback() && !ip("1.2.3.4").isLoopback()',
    "link-local-multicast": 'ip("224.0.0.1").isLinkLocalMulticast() && ip("ff02::1").isLinkLocalMulticast() && !ip("224.0.1.1").isLinkLocalMulticast()',
    "link-local-unicast": 'ip("169.254.1.1").isLinkLocalUnicast() && ip("fe80::1").isLinkLocalUnicast()',
    # netip: private and ULA addresses are global unicast; broadcast and multicast are not
    "global-unicast": 'ip("10.0.0.1").isGlobalUnicast() && ip("fd00::1").isGlobalUnicast() && !ip("255.255.255.255").isGlobalUnicast() && !ip("ff00::1").isGlobalUnicast()',
    # cidr
    "cidr-contains-ip": 'cidr("192.168.0.0/24").containsIP(ip("192.168.0.1"))',
    "cidr-contains-ip-string": 'cidr("192.168.0.0/24").containsIP("192.168.0.1") && !cidr("192.168.0.0/24").containsIP("192.168.1.1")',
    "cidr-contains-cidr": 'cidr("192.168.0.0/16").containsCIDR(cidr("192.168.10.0/24")) && !cidr("192.168.10.0/24").containsCIDR("192.168.0.0/16")',
    "cidr-contains-itself": 'cidr("10.0.0.0/8").containsCIDR("10.0.0.0/8")',
    "cidr-ip-keeps-the-host-bits": 'cidr("192.168.0.1/24").ip() == ip("192.168.0.1")',
    "cidr-masked": 'cidr("192.168.0.1/24").masked() == cidr("192.168.0.0/24") && string(cidr("192.168.0.1/24").masked()) == "192.168.0.0/24"',
    "cidr-prefix-length": 'cidr("2001:db8::/32").prefixLength() == 32',
    "cidr-string": 'string(cidr("2001:DB8::/32")) == "2001:db8::/32"',
    "is-cidr": 'isCIDR("10.0.0.0/8") && !isCIDR("10.0.0.0") && !isCIDR("10.0.0.0/33") && !isCIDR("::ffff:1.2.3.4/120")',
    # on device data
    "device-address-in-cidr": f'cidr("10.0.0.0/8").containsIP(device.attributes["{DRA}"].addr)',
    # regex
    "matches": f'device.attributes["{DRA}"].mac.matches("^([0-9a-f]{{2}}:){{5}}[0-9a-f]{{2}}$")',
    "find": '"abc 123".find("[0-9]+") == "123" && "abc".find("[0-9]+") == ""',
    "find-all": f'device.attributes["{DRA}"].ports.findAll("[0-9]+") == ["80", "443"]',
    "find-all-limit": '"123 abc 456".findAll("[0-9]+", 1) == ["123"] && "1 2 3".findAll("[0-9]", -1).size() == 3',
    # format (strings extension)
    "format": '"%s/%d".format(["gpu", 3]) == "gpu/3"',
    # lists
    "is-sorted": "[1, 2, 3].isSorted() && !['b', 'a'].isSorted() && [].isSorted()",
    "sum": "[1, 2, 3].sum() == 6 && [1.5, 2.5].sum() == 4.0 && [].sum() == 0",
    "min-max": "[3, 1, 2].min() == 1 && ['a', 'c', 'b'].max() == 'c'",
}

ERRORS: dict[str, tuple[str, str]] = {
    "ip-parse-error": ('ip("1.2.3").family() == 4', "parse error during conversion from string"),
    "ip-zone": ('ip("fe80::1%eth0").family() == 6', "with zone value is not allowed"),
    "ip-4-in-6": ('ip("::ffff:1.2.3.4").family() == 6', "IPv4-mapped IPv6 address"),
    "cidr-parse-error": ('cidr("10.0.0.0").prefixLength() == 0', "parse error during conversion"),
    "bad-regex": ('"abc".find("(") == ""', "error parsing regexp"),
    "min-of-empty-list": ("[].min() == 0", "empty list"),
}


@pytest.mark.parametrize("expression", TRUE.values(), ids=TRUE.keys())
def test_base_library_expression_is_true(expression: str) -> None:
    assert cel.compile_selector(expression).matches(DRA, DEV) is True


@pytest.mark.parametrize(("expression", "error"), ERRORS.values(), ids=ERRORS.keys())
def test_base_library_runtime_error(expression: str, error: str) -> None:
    sel = cel.compile_selector(expression)
    with pytest.raises(cel.CELRuntimeError, match=error):
        sel.matches(DRA, DEV)


def test_ip_and_cidr_are_typed_at_compile_time() -> None:
    with pytest.raises(cel.CELCompileError, match="found no matching overload"):
        cel.compile_selector('ip("1.2.3.4").prefixLength() == 0')
