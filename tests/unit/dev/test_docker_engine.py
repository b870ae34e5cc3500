"""Why dockerd did not start, in one line, from the end of a real log: Debian's dockerd 20.10 started with a storage
driver it does not have (the way any start-up refusal ends: ``failed to start daemon: …``)."""

from __future__ import annotations

from streamproc_dev.docker_engine import start_failure

REFUSED = """\
time="2026-11-29T23:36:23.722852221Z" level=warning msg="[core] grpc: addrConn.createTransport failed to connect to \
{unix:///tmp/dd/exec/containerd/containerd.sock localhost <nil> 0 <nil>}. Err: connection error: desc = \\"transport: \
Error while dialing dial unix:///tmp/dd/exec/containerd/containerd.sock: timeout\\". Reconnecting..." module=grpc
time="2026-11-29T23:36:23.722905100Z" level=info msg="[core] Subchannel Connectivity change to TRANSIENT_FAILURE" \
module=grpc
failed to start daemon: error initializing graphdriver: driver not supported
"""


def test_the_daemon_s_own_refusal_is_the_cause() -> None:
    assert start_failure(REFUSED) == "failed to start daemon: error initializing graphdriver: driver not supported"


def test_an_error_line_s_message_when_there_is_no_refusal() -> None:
    log = 'time="2026-11-29T23:36:22Z" level=error msg="failed to mount overlay: \\"invalid argument\\"" storage=x\n'
    assert start_failure(log) == 'failed to mount overlay: \\"invalid argument\\"'


def test_an_empty_log() -> None:
    assert start_failure("") == "it exited without a log line"
