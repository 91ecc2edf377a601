"""The scaled shape across hosts (``tests.support.netns``): each API and worker pair in a network
namespace of its own, the root namespace the database host, each host joined to it by its link.

PostgreSQL, the tests' Temporal server and the webhook receiver listen on 127.0.0.1 of the root
namespace; ``Network`` carries them over each host's link with relays (``tests.support.relay``):
a host's processes reach PostgreSQL and Temporal at the root end of its link, and the receiver at
127.0.0.1 of their own namespace (the webhook URL the organizations have, a loopback one as the
egress policy allows outside production), relayed to the root end of the link and on to the
receiver. So everything a host's processes say to the database host crosses their link, and stalls
while it is cut.

``LinkedRouter`` is the client's side of the links: ``Router``'s load balancing over ``Link``
transports; when an API's host is cut off, the calls in flight to it lose their connection at once
(rather than stalling until the link is back) and are sent again to a live API, as a load balancer
that stopped hearing from a host would do.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable

import httpx
from sqlalchemy import Engine, make_url, text
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

from cli.stack import api_command, worker_command
from core.settings import Settings
from tests.support.netns import Hosts
from tests.support.ports import free_port
from tests.support.relay import Relay
from tests.support.scaled_stack import DEADLINE, Process, Router, ScaledStack, Stamps
from tests.support.workflow import asked_again


class Network:
    """The hosts and the relays that carry the database host's services over their links."""

    def __init__(self, hosts: Hosts, settings: Settings) -> None:
        self.hosts = hosts
        self.root = Relay()
        self.inside = {name: Relay(host.netns) for name, host in hosts.hosts.items()}
        self.carried: dict[str, tuple[int, int]] = {}  # host -> (PostgreSQL's port, Temporal's)
        self._pg = make_url(settings.database_url)
        temporal_host, _, temporal_port = settings.temporal_address.rpartition(":")
        self.targets = {  # what is carried, where it listens
            "pg": (self._pg.host or "127.0.0.1", self._pg.port or 5432),
            "temporal": (temporal_host, int(temporal_port)),
        }

    @classmethod
    def make(cls, names: list[str], settings: Settings) -> Network:
        """Hosts ``names`` (NetnsUnavailable where they cannot be made), PostgreSQL and Temporal
        relayed to each."""
        network = cls(Hosts.make(names), settings)
        try:
            for relay in (network.root, *network.inside.values()):
                relay.start()
            for name, host in network.hosts.hosts.items():
                network.carried[name] = (
                    network.root.forward((host.root_address, 0), network.targets["pg"]),
                    network.root.forward((host.root_address, 0), network.targets["temporal"]),
                )
        except BaseException:
            network.remove()
            raise
        return network

    def application_name(self, name: str) -> str:
        """What the host's processes call themselves to PostgreSQL (``pg_stat_activity``)."""
        return f"mandatum-{self.hosts.tag}-{name}"

    def settings_on(self, name: str, settings: Settings) -> Settings:
        """``settings`` for a process on host ``name``: PostgreSQL and Temporal at the root end of
        its link, its own endpoints on its address."""
        host, (pg, temporal) = self.hosts[name], self.carried[name]
        url = self._pg.set(
            host=host.root_address, port=pg, query={"application_name": self.application_name(name)}
        )
        return settings.model_copy(
            update={
                "database_url": url.render_as_string(hide_password=False),
                "temporal_address": f"{host.root_address}:{temporal}",
                "api_host": host.address,
                "worker_health_host": host.address,
            }
        )

    def reach(self, port: int) -> None:
        """127.0.0.1:``port`` of the root namespace (a receiver) at 127.0.0.1:``port`` of every
        host, over the host's link."""
        for name, host in self.hosts.hosts.items():
            at_root = self.root.forward((host.root_address, 0), ("127.0.0.1", port))
            self.inside[name].forward(("127.0.0.1", port), (host.root_address, at_root))

    def remove(self) -> None:
        """The relays (their sockets hold the namespaces), then the hosts."""
        for relay in (*self.inside.values(), self.root):
            relay.stop()
        self.hosts.remove()


class HostedStack(ScaledStack):
    """``ScaledStack`` with each process on a host of ``network``."""

    def __init__(self, settings: Settings, network: Network) -> None:
        super().__init__(settings)
        self.network = network

    async def start_on(self, host: str, name: str, kind: str) -> Process:
        settings = self.network.settings_on(host, self.settings)
        if kind == "api":
            settings = settings.model_copy(update={"api_port": free_port()})
            command = api_command(settings)
        else:
            settings = settings.model_copy(update={"worker_health_port": free_port()})
            command = worker_command()
        return await self._start(name, kind, settings, self.network.hosts[host].exec(command))

    def api_url(self, name: str) -> str:
        settings = self.processes[name].settings
        return f"http://{settings.api_host}:{settings.api_port}"

    async def ready(self, name: str) -> bool:
        """As ``ScaledStack.ready``; False, not an error, when the host cannot be reached."""
        try:
            return await super().ready(name)
        except httpx.TransportError:
            return False


class Link(httpx.AsyncBaseTransport):
    """An API's connections, over a link the test may cut: while ``cut`` is set, a call in flight
    loses its connection (httpx.ReadError) and a new one cannot connect (httpx.ConnectError).
    ``answered`` counts the answers that came back."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.cut = asyncio.Event()
        self.answered = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.cut.is_set():
            raise httpx.ConnectError("its host is cut off", request=request)
        sending = asyncio.ensure_future(self.inner.handle_async_request(request))
        cutting = asyncio.ensure_future(self.cut.wait())
        try:
            done, _ = await asyncio.wait({sending, cutting}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            sending.cancel()
            raise
        finally:
            cutting.cancel()
        if sending not in done:
            sending.cancel()
            await asyncio.wait({sending})  # its connection closed
            raise httpx.ReadError("the connection was lost: its host was cut off", request=request)
        response = sending.result()
        self.answered += 1
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


class LinkedRouter(Router):
    """``Router`` over ``Link`` transports: ``cut(i)`` is API ``i``'s host cut off as the load
    balancer sees it (its calls in flight lost, none sent to it), ``restore(i)`` the host back."""

    def __init__(self, urls: list[str]) -> None:  # Router's, with a Link under each client
        self.links = [Link() for _ in urls]
        self.clients = [
            httpx.AsyncClient(base_url=url, timeout=30, transport=link)
            for url, link in zip(urls, self.links, strict=True)
        ]
        self.down: set[int] = set()
        self.stamps = Stamps()

    def cut(self, i: int) -> None:
        self.down.add(i)
        self.links[i].cut.set()

    def restore(self, i: int) -> None:
        self.links[i].cut.clear()
        self.down.discard(i)


def blocks_others(engine: Engine, application_name: str) -> bool:
    """A connection of ``application_name`` holds a lock that another connection waits for (a
    host cut off in the middle of a transaction holds its row locks until it is back)."""
    query = text(
        "SELECT EXISTS (SELECT 1 FROM pg_stat_activity waiting JOIN pg_stat_activity holding"
        " ON holding.pid = ANY (pg_blocking_pids(waiting.pid))"
        " WHERE holding.application_name = :name)"
    )
    with engine.connect() as conn:
        return bool(conn.execute(query, {"name": application_name}).scalar())


async def polls_since(client: Client, queue: str, pid: int, since: float) -> bool:
    """The worker of process ``pid`` has polled ``queue`` for a task since ``since`` (epoch
    seconds), as Temporal's pollers of the queue tell."""
    for kind in (TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY):
        request = DescribeTaskQueueRequest(
            namespace=client.namespace, task_queue=TaskQueue(name=queue), task_queue_type=kind
        )
        ask = functools.partial(client.workflow_service.describe_task_queue, request)
        described = await asked_again(ask)
        for poller in described.pollers:
            seen = poller.last_access_time.seconds + poller.last_access_time.nanos / 1e9
            if poller.identity.startswith(f"{pid}@") and seen >= since:
                return True
    return False


async def until(what: str, condition: Callable[[], Awaitable[bool]], seconds: float = DEADLINE) -> None:
    """Poll ``condition`` until true; AssertionError naming ``what`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not await condition():
        assert time.monotonic() < deadline, f"{what}: not within {seconds:.0f}s"
        await asyncio.sleep(0.05)
