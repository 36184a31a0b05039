import time

from trainmedic.probes.subproc import run_cmd

from .helpers import pid_alive


def test_missing_binary_is_reported_not_raised(fakebin):
    res = run_cmd(["nvidia-smi", "-L"], 2)
    assert res.returncode is None and "not found" in res.error
    assert not res.ok


def test_non_zero_exit_keeps_output(fakebin):
    fakebin("tool", "echo partial; echo broken >&2; exit 3")
    res = run_cmd(["tool"], 2)
    assert res.returncode == 3 and not res.ok
    assert res.stdout.strip() == "partial" and res.stderr.strip() == "broken"
    assert res.first_error_line() == "broken"


def test_non_executable_file_is_permission_denied(fakebin):
    fakebin("tool", "echo hi", executable=False)
    res = run_cmd(["tool"], 2)
    assert res.returncode is None
    assert "permission denied" in res.error and "/bin/tool" in res.error


def test_garbage_bytes_are_decoded_with_replacement(fakebin):
    fakebin("tool", r"/usr/bin/printf '\377\376ok\n'")
    res = run_cmd(["tool"], 2)
    assert res.ok and "ok" in res.stdout and "\ufffd" in res.stdout


def test_hang_is_killed_with_its_whole_process_group(fakebin, tmp_path):
    pidfile = tmp_path / "child.pid"
    # the shell starts a grandchild sleep: both must die at the timeout
    fakebin("tool", f"/bin/sleep 600 & echo $! > {pidfile}; wait")
    start = time.monotonic()
    res = run_cmd(["tool"], 0.5)
    elapsed = time.monotonic() - start
    assert res.timed_out and res.returncode is None
    assert elapsed < 2.0
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 2
    while pid_alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_alive(child)


def test_zero_budget_does_not_start_anything(fakebin):
    fakebin("tool", "echo hi")
    res = run_cmd(["tool"], 0)
    assert res.returncode is None and "timed out" in res.error
