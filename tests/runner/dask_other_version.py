"""A Dask worker preload (``--preload tests.runner.dask_other_version``): this worker reports another abbench.

It stands for a worker on which a different abbench is installed, the mismatch the executor must refuse
before any run starts.
"""

import abbench

abbench.__version__ = "0.0.1-other"
