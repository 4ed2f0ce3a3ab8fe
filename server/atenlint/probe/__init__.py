"""Runs in the worker: reads the support registries of the installed packages (torch.onnx,
onnxscript, coremltools, executorch) and answers plain JSON tables for `targets/`."""
