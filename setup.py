"""Build the compiled twins (Cython) of the hot loops, each once.

Every ``broker/**/_*_c.pyx`` module is compiled; its pure-Python reference
(``_*_py.py``) sits beside it and is what runs when the extension is missing
or ``BROKER_NO_EXTENSIONS=1`` is set (see ``broker/records/twins.py``).

Compiling the four twins is most of a fresh set-up's time, and pip rebuilds
an editable install from scratch every time it runs (``pip install -e
'.[clients]'`` after ``make setup`` would compile them again). So a built
extension is kept in a cache, ``$BROKER_EXT_CACHE`` (default
``${XDG_CACHE_HOME:-~/.cache}/broker/ext``; ``off`` disables it), under a key
made of everything the binary depends on: the ``.pyx`` text, the Cython
version, the compiler, its flags and the directives, and the interpreter. A hit
is copied, a miss is cythonized and compiled (in parallel, one job a core) and
stored. A cache that cannot be written is skipped with a word, never fatal.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import sysconfig
from pathlib import Path

import Cython
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).parent
COMPILE_ARGS = ["-O3"]
DIRECTIVES = {
    "boundscheck": False,
    "wraparound": False,
    "cdivision": True,
    "initializedcheck": False,
}


def _say(text: str) -> None:
    # pip shows a build's stderr only on failure unless -v; make prints it through
    print(f"broker build: {text}", file=sys.stderr, flush=True)


def _extensions() -> list[Extension]:
    exts = []
    for pyx in sorted(HERE.glob("broker/**/_*_c.pyx")):
        rel = pyx.relative_to(HERE)
        module = ".".join(rel.with_suffix("").parts)
        exts.append(Extension(module, [str(rel)], extra_compile_args=COMPILE_ARGS))
    return exts


def cache_dir() -> Path | None:
    setting = os.environ.get("BROKER_EXT_CACHE", "")
    if setting.lower() == "off":
        return None
    if setting:
        return Path(setting)
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except RuntimeError:  # no home directory (a build sandbox): nothing to cache in
            return None
    return Path(base) / "broker" / "ext"


def cache_key(pyx: Path) -> str:
    digest = hashlib.sha256()
    for part in (
        pyx.read_bytes(),
        Cython.__version__.encode(),
        repr(sorted(DIRECTIVES.items())).encode(),
        repr(COMPILE_ARGS).encode(),
        str(sysconfig.get_config_var("EXT_SUFFIX")).encode(),
        sys.version.encode(),
        str(sysconfig.get_config_var("CC")).encode(),
        os.environ.get("CC", "").encode(),
        os.environ.get("CFLAGS", "").encode(),
    ):
        digest.update(part)
        digest.update(b"\0")
    return digest.hexdigest()[:32]


class CachedBuildExt(build_ext):
    """build_ext that copies what the cache holds and compiles the rest at once."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if not self.parallel:
            self.parallel = os.cpu_count() or 1

    def build_extensions(self) -> None:
        cache = cache_dir()
        todo = []
        for ext in self.extensions:
            target = Path(self.get_ext_fullpath(ext.name))
            cached = cache / f"{ext.name}-{cache_key(Path(ext.sources[0]))}.so" if cache else None
            if cached is not None and cached.is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(cached, target)
                _say(f"{ext.name}: compiled before, copied from {cached.parent}")
            else:
                todo.append((ext, target, cached))
        if not todo:
            return
        _say(
            f"compiling {len(todo)} Cython twin(s) with {self.parallel} job(s), about 30 s a"
            f" core: {', '.join(ext.name for ext, _, _ in todo)}"
        )
        generated = cythonize(
            [Extension(ext.name, list(ext.sources)) for ext, _, _ in todo],
            language_level=3,
            compiler_directives=DIRECTIVES,
            nthreads=self.parallel if isinstance(self.parallel, int) else 0,
            quiet=True,
        )
        for (ext, _, _), made in zip(todo, generated, strict=True):
            ext.sources = made.sources  # the generated .c
        everything = self.extensions
        # the largest first: with one job a core the last to start is a small one
        self.extensions = sorted(
            (ext for ext, _, _ in todo), key=lambda e: -os.path.getsize(e.sources[0])
        )
        try:
            super().build_extensions()
        finally:
            # the editable install copies every extension (cached or not) to the source tree
            self.extensions = everything
        for ext, target, cached in todo:
            if cached is None:
                continue
            try:
                cached.parent.mkdir(parents=True, exist_ok=True)
                partial = cached.with_suffix(f".{os.getpid()}.tmp")
                shutil.copyfile(target, partial)
                partial.replace(cached)
            except OSError as exc:
                _say(f"not cached ({exc}); the next install compiles {ext.name} again")
        _say("compiled; kept in " + str(cache) if cache else "compiled (cache off)")


if __name__ == "__main__":  # pip's build backend runs this file as __main__; tests import it
    setup(ext_modules=_extensions(), cmdclass={"build_ext": CachedBuildExt})
