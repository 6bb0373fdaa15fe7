"""The Slurm TRES parser: the dictionary path (a column of repeated resource shapes, parsed once per
distinct string) gives the same values as parsing every row."""
import numpy as np
import pyarrow as pa

from acmemodel.trace.importers.slurm_fields import _tres, _tres_values


def test_tres_dictionary_path_equals_row_path():
    rng = np.random.default_rng(3)
    shapes = ["billing=16,cpu=16,gres/gpu=8,mem=128G,node=1", "cpu=4,mem=4096,node=1", "",
              "cpu=8,gres/gpu:a100=2,gres/gpu:h100=1,mem=1T", None, " cpu=2,mem=512M ",
              "billing=1,cpu=1,gres/gpu=x,mem=2K"]
    vals = [shapes[i] for i in rng.integers(0, len(shapes), 20_000)]
    arr = pa.chunked_array([pa.array(vals[:9000]), pa.array(vals[9000:])])
    fast = _tres(arr)
    slow = _tres_values(arr)
    for a, b in zip(fast, slow):
        np.testing.assert_array_equal(a, b)
    gpu, cpu, mem = fast
    i = vals.index("cpu=8,gres/gpu:a100=2,gres/gpu:h100=1,mem=1T")
    assert (gpu[i], cpu[i], mem[i]) == (3.0, 8.0, 1024.0)
    j = vals.index(None)
    assert np.isnan(gpu[j]) and np.isnan(cpu[j])


def test_tres_mostly_distinct_strings_parsed_row_by_row():
    vals = [f"cpu={k},mem={k}M" for k in range(10_000)]
    gpu, cpu, mem = _tres(pa.array(vals))
    np.testing.assert_array_equal(cpu, np.arange(10_000.0))
    np.testing.assert_allclose(mem, np.arange(10_000.0) / 1024)
    assert (gpu == 0).all()
