"""Device lifecycle: one device per SoC per process, refcounted opens, settings conflicts, leaks on close."""
import logging

import numpy as np
import pytest

from npurt.errors import ErrorCode, NpuError
from npurt.memory import open_device, open_devices
from conftest import open_fds


def test_open_twice_returns_same_device_refcounted():
    dev = open_device("rk3588")
    again = open_device("rk3588")
    assert again is dev
    assert dev.close() == []          # first close only drops a reference
    assert not dev.closed
    buf = dev.alloc(100)
    assert buf.alive
    dev.free(buf)
    assert dev.close() == []
    assert dev.closed
    assert all(d is not dev for d in open_devices())


def test_reopen_with_other_settings_is_busy_and_changes_nothing():
    with open_device("rk3588", coherence="coherent") as dev:
        for kwargs in ({"coherence": "strict"}, {"ddr_limit": 1 << 20}, {"domain_size": 1 << 20}):
            with pytest.raises(NpuError) as err:
                open_device("rk3588", **kwargs)
            assert err.value.code == ErrorCode.BUSY
        assert dev._refs == 1
        same = open_device("rk3588", coherence="coherent")     # same settings: fine
        assert same is dev
        same.close()
    assert dev.closed


def test_soc_from_environment(monkeypatch):
    monkeypatch.setenv("NPURT_SOC", "rk3576")
    with open_device() as dev:
        assert dev.soc == "rk3576"
        assert dev.stats().sram_total == 480 * 1024
    monkeypatch.delenv("NPURT_SOC")
    with open_device() as dev:
        assert dev.soc == "rk3588"


def test_coherence_from_environment(monkeypatch):
    monkeypatch.setenv("NPURT_COHERENCE", "check")
    with open_device("rk3568") as dev:
        assert dev.coherence == "check"


def test_bad_open_arguments():
    for kwargs, code in (({"soc": "rk9999"}, ErrorCode.INVALID_ARGUMENT),
                         ({"coherence": "sometimes"}, ErrorCode.INVALID_ARGUMENT),
                         ({"ddr_limit": -1}, ErrorCode.INVALID_ARGUMENT),
                         ({"domain_size": 1000}, ErrorCode.INVALID_ARGUMENT)):
        with pytest.raises(NpuError) as err:
            open_device(**{"soc": "rk3566", **kwargs})
        assert err.value.code == code
    assert all(d.soc != "rk3566" for d in open_devices())


def test_two_socs_are_two_devices():
    with open_device("rk3588") as a, open_device("rk3576") as b:
        assert a is not b
        x, y = a.alloc(4096), b.alloc(4096)
        assert a.stats().buffers == 1 and b.stats().buffers == 1
        x.free()
        y.free()


def test_close_releases_leftovers_and_reports_leaks(caplog):
    before = open_fds()
    dev = open_device("rk3588")
    kept = dev.alloc(5000, owner="ctx1", name="weights")
    view = kept.view()
    view[:] = 9
    dev.alloc(8192, placement="sram")
    dev.alloc(3 << 20, placement="sram_first")
    with caplog.at_level(logging.WARNING, logger="npurt.memory"):
        leaks = dev.close()
    assert [leak["placement"] for leak in leaks] == ["ddr", "sram", "sram+ddr"]
    assert leaks[0]["owner"] == "ctx1" and leaks[0]["name"] == "weights"
    assert dev.last_leaks == leaks
    assert "leak" in caplog.text
    assert open_fds() == before
    st = dev.stats()
    assert (st.buffers, st.ddr_bytes, st.sram_bytes, st.open_fds, st.domain_used) == (0, 0, 0, 0, 0)
    assert not kept.alive
    assert int(view.sum()) == 9 * 5000          # the view still owns live memory
    with pytest.raises(NpuError) as err:
        dev.alloc(10)
    assert err.value.code == ErrorCode.INVALID_HANDLE
    assert dev.close() == []                    # closing again is harmless


def test_stats_accounting_and_peaks():
    with open_device("rk3588") as dev:
        a = dev.alloc(1, owner="a")
        b = dev.alloc(4097, owner="b")
        s = dev.alloc(10000, placement="sram", owner="a")
        st = dev.stats()
        assert st.ddr_bytes == 4096 + 8192
        assert st.sram_bytes == 12288
        assert st.buffers == st.owned_buffers == 3
        assert st.open_fds == 1 + 2            # SRAM memfd + two DDR memfds
        assert dict(st.by_owner) == {"a": (2, 4096 + 12288), "b": (1, 8192)}
        assert st.sram_free == st.sram_total - 12288
        assert st.live_bytes == 4096 + 8192 + 12288
        for buf in (a, b, s):
            buf.free()
        st = dev.stats()
        assert (st.ddr_bytes, st.sram_bytes, st.buffers, st.open_fds) == (0, 0, 0, 1)
        assert (st.peak_ddr_bytes, st.peak_sram_bytes, st.peak_buffers) == (12288, 12288, 3)
        assert st.allocations == st.releases == 3
        assert st.as_dict()["by_owner"] == {}


def test_device_without_sram():
    with open_device("rk3568") as dev:
        assert dev.stats().sram_total == 0 and dev.stats().open_fds == 0
        with pytest.raises(NpuError) as err:
            dev.alloc(4096, placement="sram")
        assert err.value.code == ErrorCode.NOT_SUPPORTED
        buf = dev.alloc(4096, placement="sram_first")     # falls back to DDR
        assert buf.placement == "ddr" and buf.sram_size == 0
        buf.free()
        assert dev.sram_dump().endswith("SRAM total size: 0, used: 0, free: 0\n")


def test_threads_allocate_concurrently():
    import threading
    with open_device("rk3588") as dev:
        errors = []

        def work():
            try:
                for _ in range(50):
                    b = dev.alloc(5000, placement="sram_first")
                    b.view()[:] = 1
                    assert dev.lookup_device(b.dev_addr)[0] is b
                    b.free()
            except Exception as exc:      # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        st = dev.stats()
        assert (st.buffers, st.ddr_bytes, st.sram_bytes, st.domain_used) == (0, 0, 0, 0)
        np.testing.assert_equal(st.allocations, 200)
