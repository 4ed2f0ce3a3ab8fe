"""The zygote's warm-up (worker/main.py): what it loads before forking a file's child
depends on what the request's classes need, so a run that only traces with torch.jit
never pays for torch's other front ends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from atenlint.worker import main
from atenlint.worker.vocabulary import CAPTURE_SCRIPT, CAPTURE_TRACE

SERVER = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "server")


@pytest.mark.parametrize(
    ("classes", "infer", "paths"),
    [
        ({"A": {"inputs": "torch.randn(1, 3)"}, "B": {"kwargs": "{'x': torch.randn(1)}"}}, True, (CAPTURE_TRACE,)),
        ({"A": {"inputs": "torch.randn(1, 3)"}, "B": {}}, False, (CAPTURE_TRACE, CAPTURE_SCRIPT)),
        ({"A": {}}, False, (CAPTURE_SCRIPT,)),
        ({"A": {}}, True, (CAPTURE_TRACE, CAPTURE_SCRIPT)),  # inferred inputs are traced
        ({"A": {"factories": "f.py"}}, False, (CAPTURE_SCRIPT,)),  # the hooks may give none
        ({}, False, (CAPTURE_TRACE, CAPTURE_SCRIPT)),  # nothing said: every path
    ],
)
def test_a_request_warms_the_capture_paths_its_classes_take(classes, infer, paths):
    assert main._capture_paths({"classes": classes, "infer_inputs": infer}) == paths


def test_only_views_past_meta_tensors_load_torchs_other_front_ends():
    """torch.export, fake tensors and Dynamo (seconds to import) wait for a view that runs
    them; the dispatcher view and scripting run on meta tensors and need only torch's meta
    kernels, torch.jit.trace of classes with inputs not even those."""
    assert not main._needs_front_ends(["onnx-jit", "jit"])
    assert not main._needs_front_ends(["onnx-jit", "dispatch"])
    assert main._needs_front_ends(["onnx-jit", "executorch-export"])
    assert main._needs_front_ends(["export"])
    assert not main._needs_meta_kernels(["onnx-jit", "jit"], (CAPTURE_TRACE,))
    assert main._needs_meta_kernels(["onnx-jit"], (CAPTURE_TRACE, CAPTURE_SCRIPT))
    assert main._needs_meta_kernels(["onnx-jit", "dispatch"], (CAPTURE_TRACE,))
    assert main._needs_meta_kernels([], (CAPTURE_SCRIPT,))  # the source pass


def test_a_child_that_imported_only_symbolic_shapes_asks_its_zygote_for_those_alone():
    """A file traced only by torch.jit.trace whose meta build imported torch's symbolic
    shapes (sympy) makes the zygote import just those before its next child; any other
    front end a child imported makes it load them all."""
    from atenlint import torchcompat

    assert main._replied_status([]) == main._REPLIED
    assert main._replied_status([torchcompat.SYMBOLIC_SHAPES_FRONT_END]) == main._REPLIED_LOADING_SYMBOLIC_SHAPES
    assert (
        main._replied_status([torchcompat.SYMBOLIC_SHAPES_FRONT_END, "torch._dynamo"])
        == main._REPLIED_LOADING_FRONT_ENDS
    )
    assert torchcompat.SYMBOLIC_SHAPES_FRONT_END in torchcompat.LAZY_FRONT_ENDS


def test_a_static_request_loads_the_front_ends_and_warms_no_view():
    assert main._before_fork("static", {"path": "/x.py", "module": "x"}) == ([], (CAPTURE_SCRIPT,))


_ZYGOTE = textwrap.dedent(
    """
    import json, sys
    from atenlint.worker import main
    main._Options.run_dir = sys.argv[1]
    main._preload()
    import gc
    seen = {"hello": "torch._dynamo" in sys.modules, "frozen": gc.get_freeze_count() > 0}
    main._warm_for(["onnx-jit"], ("trace",))
    seen["jit"] = "torch._dynamo" in sys.modules
    seen["jit_sympy"] = "sympy" in sys.modules
    main._Options.symbolic_shapes_wanted = True  # as after a child that imported them
    main._warm_for(["onnx-jit"], ("trace",))
    seen["symbolic_shapes"] = ["sympy" in sys.modules, "torch._dynamo" in sys.modules]
    seen["warmed"] = sorted(map(list, main._Options.warmed))
    main._warm_for(["onnx-jit"], ("trace", "script"))
    seen["scripted"] = ["sympy" in sys.modules, "torch._dynamo" in sys.modules]
    main._warm_for(["dispatch"], ("trace", "script"))
    seen["dispatch"] = "torch._dynamo" in sys.modules
    seen["views"] = sorted(main._warmed_views())
    main._warm_for(["executorch-export"], ("trace",))
    seen["export"] = "torch._dynamo" in sys.modules
    print(json.dumps(seen))
    """
)


def test_a_zygote_that_only_traces_with_torch_jit_never_imports_dynamo(tmp_path):
    """Started, and warmed for the TorchScript exporter's view on classes with inputs, the
    zygote has not imported torch._dynamo (about a second of every worker start on 2
    cores), nor sympy (its sample's inputs are literal factory calls, made without torch's
    meta kernels); a class without inputs (scripting) makes it load torch's meta kernels
    and their symbolic shapes, and the dispatcher view needs no more: only a view that runs
    torch.export loads Dynamo."""
    env = dict(os.environ, PYTHONPATH=SERVER, TMPDIR=str(tmp_path))  # as the pool starts a worker
    done = subprocess.run(
        [sys.executable, "-c", _ZYGOTE, str(tmp_path)], env=env, capture_output=True, text=True, timeout=600, check=True
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["hello"] is False and seen["jit"] is False and seen["jit_sympy"] is False
    assert seen["frozen"]  # torch's and atenlint's import-time objects: no collection walks them again
    assert seen["symbolic_shapes"] == [True, False]
    assert seen["warmed"] == [["onnx-jit", CAPTURE_TRACE]]
    assert seen["scripted"] == [True, False]
    assert seen["dispatch"] is False
    assert seen["views"] == ["dispatch", "onnx-jit"]
    assert seen["export"] is True


_DELEGATE_ZYGOTE = textwrap.dedent(
    """
    import json, sys
    from atenlint.worker import main
    from atenlint.capture.delegate_view import PARTITIONERS
    main._Options.run_dir = sys.argv[1]
    main._preload()
    main._warm_for(["executorch:xnnpack"], ("trace",))
    print(json.dumps({
        "to_edge": "executorch.exir.program._program" in sys.modules,
        "partitioner": PARTITIONERS["xnnpack"][0] in sys.modules,
        "warmed": sorted(map(list, main._Options.warmed)),
    }))
    """
)


def _zygote_script_result(script: str, tmp_path) -> object:
    """Run `script` (a zygote driven by hand) in a fresh interpreter; its last stdout line, as JSON."""
    env = dict(os.environ, PYTHONPATH=SERVER, TMPDIR=str(tmp_path))
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], env=env, capture_output=True, text=True, timeout=600, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_delegate_view_warmed_while_a_request_waits_is_imported_for_every_child(tmp_path):
    """Before the first child of a run that judges a delegate, the zygote imports executorch's
    to_edge and the partitioner (the children inherit them), without running the sample."""
    pytest.importorskip("executorch.exir")
    seen = _zygote_script_result(_DELEGATE_ZYGOTE, tmp_path)
    assert seen == {"to_edge": True, "partitioner": True, "warmed": [["executorch:xnnpack", CAPTURE_TRACE]]}


def test_a_request_that_names_no_view_gets_the_front_ends_the_dispatcher_view_needs(monkeypatch):
    loaded = []
    monkeypatch.setattr(main, "_preload_front_ends", lambda: loaded.append("all"))
    monkeypatch.setattr(main, "_preload_meta_front_ends", lambda: loaded.append("meta kernels"))
    monkeypatch.setattr(main, "_warm_analysis", lambda *args: None)
    main._warm_for([], (CAPTURE_TRACE,))
    assert loaded == ["meta kernels"]


def test_an_idle_warm_up_of_the_dispatcher_view_loads_every_front_end(monkeypatch):
    """The editor's idle warm-up loads Dynamo too: a forward meta tensors cannot run is
    recorded on fake tensors, and that file's child must not import it on the way to its
    squiggles. A request's own warm-up (the command line's) loads the meta kernels only."""
    loaded: list[str] = []
    monkeypatch.setattr(main._Options, "warmed", set())
    monkeypatch.setattr(main._Options, "pending_warm", [])
    monkeypatch.setattr(main._Options, "front_ends_wanted", False)
    monkeypatch.setattr(main, "_preload_front_ends", lambda: loaded.append("all"))
    monkeypatch.setattr(main, "_preload_meta_front_ends", lambda: loaded.append("meta kernels"))
    monkeypatch.setattr(main, "_warm_analysis", lambda *args, **kwargs: None)
    main._warm_for(["dispatch"], (CAPTURE_TRACE,))
    main._warm_for(["dispatch"], (CAPTURE_SCRIPT,), idle=True)
    assert loaded == ["meta kernels", "all"]


def test_the_dispatcher_view_is_warmed_by_the_front_ends_alone(monkeypatch):
    """The sample's analysis, about a second, runs only for the toolchains' views: a child's
    first dispatcher-view capture costs no more than the next once the front ends are loaded."""
    loaded: list[bool] = []
    analysed: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
    monkeypatch.setattr(main._Options, "warmed", set())
    monkeypatch.setattr(main._Options, "pending_warm", [])
    monkeypatch.setattr(main, "_preload_front_ends", lambda: loaded.append(True))
    monkeypatch.setattr(main, "_preload_meta_front_ends", lambda: loaded.append(True))
    monkeypatch.setattr(
        main, "_warm_analysis", lambda views, paths, idle, request_waiting=None: analysed.append((views, paths))
    )
    main._warm_for(["dispatch"], (CAPTURE_TRACE, CAPTURE_SCRIPT))
    assert loaded and analysed == []
    assert main._warmed_views() == {"dispatch"}  # a later request does not warm it again
    main._warm_for(["dispatch", "executorch-export"], (CAPTURE_TRACE,))
    assert analysed == [(("executorch-export",), (CAPTURE_TRACE,))]


def test_views_warmed_while_idle_are_warmed_one_capture_path_at_a_time(monkeypatch):
    """Between two paths the zygote looks for a request again: one that comes meanwhile
    waits for one path's warm-up at most."""
    analysed: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
    monkeypatch.setattr(main._Options, "warmed", set())
    monkeypatch.setattr(main._Options, "pending_warm", ["executorch-export"])
    monkeypatch.setattr(main._Options, "paths_taken", set())  # no file yet: every path
    monkeypatch.setattr(main._Options, "front_ends_loaded", True)
    monkeypatch.setattr(main, "_preload_front_ends", lambda: None)
    monkeypatch.setattr(
        main, "_warm_analysis", lambda views, paths, idle, request_waiting=None: analysed.append((views, paths))
    )
    main._warm_next()
    assert analysed == [(("executorch-export",), (CAPTURE_TRACE,))]
    assert main._Options.pending_warm == ["executorch-export"]
    main._warm_next()
    assert analysed[1] == (("executorch-export",), (CAPTURE_SCRIPT,))
    assert main._Options.pending_warm == []


def test_after_a_file_whose_classes_all_have_inputs_the_idle_warm_up_never_scripts(monkeypatch):
    """The editor's first file leaves its export views to warm while idle: only along the
    path its classes took, so a save soon after never waits for the sample's scripting. A
    file whose class has no inputs later adds the scripted path."""
    analysed: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
    monkeypatch.setattr(main._Options, "warmed", {("dispatch", CAPTURE_TRACE), ("dispatch", CAPTURE_SCRIPT)})
    monkeypatch.setattr(main._Options, "pending_warm", [])
    monkeypatch.setattr(main._Options, "paths_taken", set())
    monkeypatch.setattr(main._Options, "front_ends_loaded", True)
    monkeypatch.setattr(main, "_preload_front_ends", lambda: None)
    monkeypatch.setattr(
        main, "_warm_analysis", lambda views, paths, idle, request_waiting=None: analysed.append((views, paths))
    )
    request = {"views": ["dispatch", "onnx-export"], "partial": True, "fast_first": True}
    with_inputs = {**request, "classes": {"A": {"inputs": "torch.randn(1, 3)"}}}
    assert main._before_fork("analyse", with_inputs) == (["dispatch"], (CAPTURE_TRACE,))
    assert main._Options.pending_warm == ["onnx-export"]
    main._warm_next()
    main._warm_next()
    assert analysed == [(("onnx-export",), (CAPTURE_TRACE,))]
    assert main._Options.pending_warm == []

    without_inputs = {**request, "classes": {"B": {}}, "infer_inputs": False}
    assert main._before_fork("analyse", without_inputs) == (["dispatch"], (CAPTURE_SCRIPT,))
    assert main._Options.pending_warm == ["onnx-export"]
    main._warm_next()
    assert analysed[1:] == [(("onnx-export",), (CAPTURE_SCRIPT,))]


# A zygote whose idle warm-up of the TorchScript exporter's view is under way when a request
# comes: the request is in the pipe before the sample's analysis reaches its first front end.
_GIVING_WAY_ZYGOTE = textwrap.dedent(
    """
    import json, os, sys, threading
    from atenlint.capture import file_capture
    from atenlint.worker import main
    main._Options.run_dir = sys.argv[1]
    main._Options.sandbox = False
    main._Options.fork = True  # `warm` notes views only where children inherit them
    main._Options.paths_taken = {"trace"}
    main._preload()
    events = []
    began, arrived, finished = threading.Event(), threading.Event(), threading.Event()
    answered = threading.Event()
    real_capture = file_capture.capture_file

    def capture_file(request, on_partial=None):
        if began.is_set():
            # The warm-up again, after the zygote wrote request 2's answer: wait until this
            # script's reader has noted it, so the events' order is the zygote's, not the
            # threads' scheduling.
            answered.wait(60)
        events.append("warm-up began")
        began.set()
        arrived.wait(600)  # the request is in the pipe from here on
        answer = real_capture(request, on_partial)
        events.append("warm-up finished")
        finished.set()
        return answer

    file_capture.capture_file = capture_file
    requests_read, requests_write = os.pipe()
    answers_read, answers_write = os.pipe()
    answers = os.fdopen(answers_write, "w", encoding="utf-8")

    def send(message):
        os.write(requests_write, (json.dumps(message) + "\\n").encode())

    def parent():
        replies = os.fdopen(answers_read, encoding="utf-8")
        send({"id": 1, "method": "warm", "params": {"views": ["onnx-jit"]}})
        replies.readline()
        began.wait(600)
        send({"id": 2, "method": "loaded_packages", "params": {}})
        arrived.set()
        reply = json.loads(replies.readline())
        events.append(f"request {reply['id']} answered")
        answered.set()
        finished.wait(600)
        send({"method": "shutdown"})

    thread = threading.Thread(target=parent)
    thread.start()
    main._serve(main._Lines(requests_read), answers)
    thread.join()
    events.append(sorted(map(list, main._Options.warmed)))
    print(json.dumps(events))
    """
)


def test_an_idle_warm_up_gives_way_to_a_request_that_comes_meanwhile(tmp_path):
    """The editor's first save after opening a file: the zygote is warming a toolchain's view
    on its sample when the request comes. The warm-up stops at the next point between two
    front-end calls, the request is answered, and the warm-up is then done again, whole."""
    events = _zygote_script_result(_GIVING_WAY_ZYGOTE, tmp_path)
    assert events == [
        "warm-up began",
        "request 2 answered",
        "warm-up began",
        "warm-up finished",
        [["onnx-jit", CAPTURE_TRACE]],
    ]


def test_a_warm_up_that_gave_way_stays_to_warm_first(monkeypatch):
    """What a stopped warm-up was warming is not counted as warmed: it is the next to warm."""
    from atenlint.capture.graphs import GivingWay

    def stopped(views, paths, idle, request_waiting=None):
        assert request_waiting is not None and request_waiting()
        raise GivingWay

    monkeypatch.setattr(main._Options, "warmed", set())
    monkeypatch.setattr(main._Options, "pending_warm", ["onnx-jit", "executorch-export"])
    monkeypatch.setattr(main._Options, "paths_taken", {CAPTURE_TRACE})
    monkeypatch.setattr(main._Options, "front_ends_loaded", True)
    monkeypatch.setattr(main, "_warm_analysis", stopped)
    main._warm_next(lambda: True)
    assert main._Options.warmed == set()
    assert main._Options.pending_warm == ["onnx-jit", "executorch-export"]
