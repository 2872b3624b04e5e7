"""Load single modules of a heavy upstream package from a source tree.

Upstream packages such as Megatron-Bridge run long ``__init__`` chains that
import transformer-engine or NPU libraries which cannot exist on a CPU machine
(``megatron/bridge/__init__`` alone reaches ``peft/lora_layers.py``).
Smoke tests only need the modules a patch changes, so within the upstream's
package every sub-package is created empty, its ``__path__`` pointing into the
tree: modules and their real imports load, package ``__init__`` files never run
unless a test asks for them by name.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Iterable, Sequence
from pathlib import Path


class UpstreamTree(importlib.abc.MetaPathFinder):
    """The import root of an upstream (the folder that holds its top-level package).

    ``package`` is the dotted package the upstream owns (``megatron.bridge``);
    ``run_init`` names sub-packages whose ``__init__.py`` must run after all.
    """

    def __init__(self, root: str | Path, package: str, run_init: Iterable[str] = ()) -> None:
        self.root = Path(root).resolve()
        self.package = package
        self.run_init = set(run_init)
        if not self._dir_of(package).is_dir():
            raise FileNotFoundError(f"package {package} not found under {self.root}")
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)
        self._extend_namespace_parents()

    def load(self, dotted_name: str) -> types.ModuleType:
        """Import ``dotted_name`` from this tree and prove that it came from there."""
        module = importlib.import_module(dotted_name)
        loaded_from = Path(getattr(module, "__file__", "") or "").resolve()
        if self.root not in loaded_from.parents:
            # Another copy (an installed distribution) won the import: a smoke
            # test would then prove nothing about the tree, so refuse.
            raise ImportError(f"{dotted_name} was imported from {loaded_from}, not from {self.root}")
        return module

    # importlib.abc.MetaPathFinder
    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.package and not fullname.startswith(self.package + "."):
            return None
        folder = self._dir_of(fullname)
        if folder.is_dir():
            init = folder / "__init__.py"
            if fullname in self.run_init and init.is_file():
                return importlib.util.spec_from_file_location(fullname, init, submodule_search_locations=[str(folder)])
            spec = importlib.machinery.ModuleSpec(fullname, _EmptyPackageLoader(), is_package=True)
            spec.submodule_search_locations = [str(folder)]
            spec.origin = str(folder)
            return spec
        module_file = folder.with_suffix(".py")
        if module_file.is_file():
            return importlib.util.spec_from_file_location(fullname, module_file)
        return None

    def _dir_of(self, dotted_name: str) -> Path:
        return self.root.joinpath(*dotted_name.split("."))

    def _extend_namespace_parents(self) -> None:
        """Let the tree join namespaces it shares (megatron-core also owns ``megatron``)."""
        parts = self.package.split(".")
        for depth in range(1, len(parts)):
            name = ".".join(parts[:depth])
            tree_dir = str(self._dir_of(name))
            module = sys.modules.get(name)
            if module is None:
                try:
                    module = importlib.import_module(name)
                except ImportError:
                    module = types.ModuleType(name)
                    module.__path__ = []
                    sys.modules[name] = module
            search = getattr(module, "__path__", None)
            if search is not None and tree_dir not in list(search):
                try:
                    search.append(tree_dir)  # a namespace package's _NamespacePath
                except AttributeError:
                    module.__path__ = [*search, tree_dir]


class _EmptyPackageLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        module.__file__ = None
