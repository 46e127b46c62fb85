"""Build the compiled twins (Cython) of the hot loops.

Every ``broker/**/_*_c.pyx`` module is compiled; its pure-Python reference
(``_*_py.py``) sits beside it and is what runs when the extension is missing
or ``BROKER_NO_EXTENSIONS=1`` is set (see ``broker/records/scan.py``).
"""

from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = Path(__file__).parent


def _extensions() -> list[Extension]:
    exts = []
    for pyx in sorted(HERE.glob("broker/**/_*_c.pyx")):
        rel = pyx.relative_to(HERE)
        module = ".".join(rel.with_suffix("").parts)
        exts.append(
            Extension(
                module,
                [str(rel)],
                extra_compile_args=["-O3"],
            )
        )
    return exts


setup(
    ext_modules=cythonize(
        _extensions(),
        language_level=3,
        compiler_directives={
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
    ),
)
