"""The address rules of outgoing calls (apps/actions/targets.py): only global unicast is called."""

from __future__ import annotations

import ipaddress

import pytest

from apps.actions.targets import TargetError, embedded_ipv4, parse_target, private_target, refusal


def ip(text: str):
    return ipaddress.ip_address(text)


class TestRefusal:
    @pytest.mark.parametrize("address", [
        "127.0.0.1", "10.0.0.8", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0",
        "0.1.2.3", "192.0.0.8", "198.18.0.1", "192.0.2.1", "240.0.0.1", "255.255.255.255",
        "::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "fec0::1", "2001:db8::1",
    ])
    def test_refuses_loopback_private_link_local_reserved_and_unspecified_addresses(self, address):
        assert refusal(ip(address))

    @pytest.mark.parametrize("address", ["224.0.0.1", "239.255.255.250", "ff02::1", "ff0e::1"])
    def test_refuses_multicast_addresses(self, address):
        assert "multicast" in refusal(ip(address))

    @pytest.mark.parametrize("address", [
        "::127.0.0.1",  # IPv4-compatible
        "::ffff:127.0.0.1",  # IPv4-mapped
        "::ffff:10.0.0.1",
        "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
        "64:ff9b::a9fe:a9fe",  # NAT64 of the metadata service, 169.254.169.254
        "2002:7f00:1::",  # 6to4 of 127.0.0.1
        "2002:c0a8:101::1",  # 6to4 of 192.168.1.1
        "2001:0:7f00:1:0:0:f5ff:fffe",  # Teredo: server 127.0.0.1, client 10.0.0.1
    ])
    def test_judges_an_ipv4_address_inside_an_ipv6_one_by_the_ipv4_address(self, address):
        assert "IPv6 address carrying" in refusal(ip(address))

    @pytest.mark.parametrize("address", [
        "8.8.8.8", "1.1.1.1", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::",
        "2001:0:808:808:0:0:f7f7:f7f7",  # Teredo: server 8.8.8.8, client 8.8.8.8
    ])
    def test_allows_global_unicast_addresses_and_ipv6_ones_that_carry_them(self, address):
        assert refusal(ip(address)) == ""

    def test_finds_both_addresses_of_a_teredo_address(self):
        assert embedded_ipv4(ip("2001:0:7f00:1:0:0:f5ff:fffe")) == (ip("127.0.0.1"), ip("10.0.0.1"))


class TestPrivateTarget:
    @pytest.mark.parametrize("url", [
        "https://[::127.0.0.1]/", "https://[64:ff9b::7f00:1]/", "https://[2002:7f00:1::]/", "https://224.0.0.1/",
        "https://127.0.0.1/hook", "https://[::ffff:127.0.0.1]/", "https://0x7f.1/", "https://2130706433/",
    ])
    def test_refuses_the_urls_of_the_review(self, url):
        assert "private address" in private_target(url)

    def test_refuses_a_name_that_resolves_to_loopback(self):
        assert private_target("https://localhost/hook") == (
            "localhost is a private address and is refused (127.0.0.1 is a loopback address)"
        )

    def test_allows_a_global_address(self):
        assert private_target("https://8.8.8.8/hook?token=x") == ""


class TestParseTarget:
    @pytest.mark.parametrize("url", [
        "https://[::1/x", "https://127.0.0.1:99999/", "https://[::1]:70000/", "https://[::1]:0/", "https://a.example:443x/",
        "https://[v1.x]/", "https://[fe80::1%25eth0]/", "https://exa mple.com/", "https://a.example\\@127.0.0.1/",
        "https:///x", "ftp://a.example/", "not a url", "", "https://-a.example/", "https://a.example:-1/",
    ])
    def test_refuses_a_malformed_url(self, url):
        with pytest.raises(TargetError):
            parse_target(url)

    @pytest.mark.parametrize("url", ["https://user:secret@a.example/", "https://user@a.example/", "https://@a.example/"])
    def test_refuses_a_user_name_or_password_and_points_to_the_signature(self, url):
        with pytest.raises(TargetError, match="signature"):
            parse_target(url)

    def test_keeps_the_secret_of_a_refused_url_out_of_the_message(self):
        with pytest.raises(TargetError) as caught:
            parse_target("https://user:s3cret@a.example:99999/?token=t0ken")

        assert "s3cret" not in str(caught.value) and "t0ken" not in str(caught.value)

    @pytest.mark.parametrize(("url", "host", "port"), [
        ("https://a.example/hook?token=x", "a.example", 443),
        ("http://a.example:8080/", "a.example", 8080),
        ("https://[2606:4700::1111]:8443/", "2606:4700::1111", 8443),
        ("https://bücher.example/", "xn--bcher-kva.example", 443),
    ])
    def test_gives_the_host_and_port_the_client_connects_to(self, url, host, port):
        target = parse_target(url)

        assert (target.host, target.port) == (host, port)
