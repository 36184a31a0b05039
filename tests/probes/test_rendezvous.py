import socket

from trainmedic.probes.base import Budget
from trainmedic.probes.rendezvous import check

from .helpers import check_types


def run(env):
    result = check(env, Budget(3))
    check_types(result)
    return result


def test_listening_master_is_ok_and_port_taken_here():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    try:
        result = run({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
    finally:
        server.close()
    f = result.facts
    assert result.status == "ok"
    assert f["master_addr_resolves"] and f["master_port_open"] and f["master_is_local"]
    assert f["port_in_use_locally"] is True and f["port"] == port


def test_nothing_listening_is_a_warning_with_the_reason():
    probe_socket = socket.socket()
    probe_socket.bind(("127.0.0.1", 0))
    port = probe_socket.getsockname()[1]
    probe_socket.close()
    result = run({"MASTER_ADDR": "localhost", "MASTER_PORT": str(port)})
    assert result.status == "warn" and result.facts["master_port_open"] is False
    assert "refused" in result.evidence["master_port_open"]
    assert result.facts["port_in_use_locally"] is False


def test_unresolvable_master_fails():
    result = run({"MASTER_ADDR": "no-such-host.invalid", "MASTER_PORT": "29500"})
    assert result.status == "fail" and result.facts["master_addr_resolves"] is False


def test_unset_and_bad_values():
    assert run({}).status == "unavailable"
    bad = run({"MASTER_ADDR": "node01", "MASTER_PORT": "http"})
    assert bad.status == "fail" and "not a port number" in bad.summary


def test_credentials_in_the_address_are_redacted():
    result = run({"MASTER_ADDR": "tcp://bob:hunter2pass@no-such-host.invalid:1"})
    assert "hunter2pass" not in result.summary + repr(result.evidence)
