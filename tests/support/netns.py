"""Hosts on one machine: Linux network namespaces, each joined to the root namespace by a virtual
Ethernet (veth) pair with a /30 subnet of its own, made and removed with iproute2's ``ip`` (as
root).

The root namespace is the database host (PostgreSQL and the tests' Temporal server run there); a
process started with ``Host.exec`` runs in the host's namespace and reaches the root namespace only
over its link. ``Hosts.cut`` takes a host's link down (its root end: both ends lose their carrier,
and the root namespace its route to the host), ``Hosts.restore`` brings it back up; connections
already open stall meanwhile and go on once the link is back, as over a network that partitioned.

Every name carries a random tag of the run (an interface name is at most 15 characters), so that
runs side by side never meet; ``Hosts.remove`` removes what ``Hosts.make`` made, even after a
failure half-way, and ``Hosts.leftovers`` lists anything of the run still there.
"""

from __future__ import annotations

import ctypes
import ipaddress
import os
import random
import secrets
import shutil
import subprocess
from dataclasses import dataclass, field

CLONE_NEWNET = 0x40000000  # <sched.h>
NETNS_DIR = "/run/netns"  # where ``ip netns add`` mounts a namespace's name


class NetnsUnavailable(RuntimeError):
    """Namespaces (or the links between them) cannot be made here; the message says why."""


class IpFailed(RuntimeError):
    """An ``ip`` command failed; the message holds the command and what it said."""


def ip(*args: str) -> str:
    """``ip <args>``'s output; IpFailed when it fails."""
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0:
        raise IpFailed(f"ip {' '.join(args)}: {(done.stderr or done.stdout).strip()}")
    return done.stdout


def why_unavailable() -> str | None:
    """Why no namespace can be made here before trying one (not root, no ``ip``); None otherwise."""
    if os.geteuid() != 0:
        return f"not root (uid {os.geteuid()})"
    if shutil.which("ip") is None:
        return "the ip command (iproute2) is missing"
    return None


def enter(netns: str) -> None:
    """Move the calling thread (alone) into namespace ``netns``: the sockets it makes from then on
    are that namespace's. ``os.setns`` only comes with Python 3.12; libc's ``setns(2)`` it is."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(os.path.join(NETNS_DIR, netns), os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"setns({netns}): {os.strerror(errno)}")
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Host:
    """One namespace and its link: ``root_end`` (in the root namespace, ``root_address``) and
    ``host_end`` (in the namespace, ``address``)."""

    name: str  # a, b, ...
    netns: str
    root_end: str
    host_end: str
    root_address: str  # the database host as this host sees it
    address: str  # this host's, as the root namespace sees it

    def exec(self, command: list[str]) -> list[str]:
        """``command`` run in this host's namespace."""
        return ["ip", "netns", "exec", self.netns, *command]


def _free_subnet(taken: str) -> ipaddress.IPv4Network:
    """A /24 of 10.0.0.0/8 that no address or route of the root namespace (``taken``) mentions."""
    for _ in range(100):
        prefix = f"10.{random.randrange(64, 250)}.{random.randrange(256)}."
        if prefix not in taken:
            return ipaddress.IPv4Network(f"{prefix}0/24")
    raise NetnsUnavailable("no free subnet of 10.0.0.0/8 for the links")


@dataclass
class Hosts:
    """The run's hosts, by name; made with ``Hosts.make``."""

    tag: str  # the run's: in every name
    hosts: dict[str, Host] = field(default_factory=dict)
    made_netns: list[str] = field(default_factory=list)
    made_links: list[str] = field(default_factory=list)

    @classmethod
    def make(cls, names: list[str]) -> Hosts:
        """A namespace and a link per name; NetnsUnavailable (with everything made removed) when
        this machine cannot have them."""
        why = why_unavailable()
        if why is not None:
            raise NetnsUnavailable(why)
        hosts = cls(secrets.token_hex(3))
        try:
            hosts._make(names)
        except BaseException:
            hosts.remove()
            raise
        return hosts

    def _make(self, names: list[str]) -> None:
        taken = ip("-4", "-o", "addr", "show") + ip("-4", "route", "show", "table", "all")
        subnets = _free_subnet(taken).subnets(new_prefix=30)
        for name in names:
            netns, root_end = f"mnd-{self.tag}-{name}", f"mnd{self.tag}{name}"
            try:
                ip("netns", "add", netns)
            except IpFailed as exc:
                raise NetnsUnavailable(f"`ip netns add` failed: {exc}") from exc
            self.made_netns.append(netns)
            host_end = f"{root_end}h"  # in the namespace: the name only needs to be unique there
            try:
                ip("link", "add", root_end, "type", "veth", "peer", "name", host_end, "netns", netns)
            except IpFailed as exc:
                raise NetnsUnavailable(f"no veth link between namespaces: {exc}") from exc
            self.made_links.append(root_end)
            root_address, address = (str(a) for a in list(next(subnets).hosts()))
            ip("addr", "add", f"{root_address}/30", "dev", root_end)
            ip("link", "set", root_end, "up")
            ip("-n", netns, "addr", "add", f"{address}/30", "dev", host_end)
            ip("-n", netns, "link", "set", host_end, "up")
            ip("-n", netns, "link", "set", "lo", "up")  # a process may talk to itself on 127.0.0.1
            self.hosts[name] = Host(name, netns, root_end, host_end, root_address, address)

    def __getitem__(self, name: str) -> Host:
        return self.hosts[name]

    def cut(self, name: str) -> None:
        ip("link", "set", self.hosts[name].root_end, "down")

    def restore(self, name: str) -> None:
        ip("link", "set", self.hosts[name].root_end, "up")

    def remove(self) -> None:
        """The links (deleting a veth end deletes its peer), then the namespaces; whatever fails
        is tried for every one, then raised. Run once no process and no socket is left in them:
        a namespace a process still holds outlives its name."""
        failed: list[str] = []
        for link in self.made_links:
            if self._has_link(link):
                try:
                    ip("link", "del", link)
                except IpFailed as exc:
                    failed.append(str(exc))
        for netns in self.made_netns:
            if os.path.exists(os.path.join(NETNS_DIR, netns)):
                try:
                    ip("netns", "del", netns)
                except IpFailed as exc:
                    failed.append(str(exc))
        if failed:
            raise IpFailed("; ".join(failed))

    def _has_link(self, link: str) -> bool:
        try:
            ip("link", "show", "dev", link)
        except IpFailed:
            return False
        return True

    def leftovers(self) -> list[str]:
        """This run's namespaces and root-side links still there (``ip netns list``, ``ip link``)."""
        names = [line.split()[0] for line in ip("netns", "list").splitlines() if line.strip()]
        links = [line.split(":")[1].strip().split("@")[0] for line in ip("-o", "link", "show").splitlines()]
        return [n for n in names if self.tag in n] + [link for link in links if self.tag in link]
