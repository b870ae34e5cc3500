import cProfile
import io
import pstats

import pytest

from bench.test_bench_fetch import PARTITIONS, RECORDS, bare_consume, measured, seed
from streamproc.fetch import FetchRange, fetch_ranges
from streamproc.storage import load_store
from tests.integration.conftest import create_topic


@pytest.mark.bench
def test_profile(kafka_broker, admin, unique, tmp_path):
    topic = create_topic(admin, unique("bench"), partitions=PARTITIONS)
    seed(kafka_broker, topic)
    ranges = [FetchRange(topic, p, 0, RECORDS) for p in range(PARTITIONS)]
    client = {"bootstrap.servers": kafka_broker}
    _, w, c = measured(lambda: bare_consume(kafka_broker, topic))
    print("bare", w, c)
    _, w, c = measured(lambda: fetch_ranges(client, load_store(str(tmp_path / "s0")), ranges, parallelism=1))
    print("fetch p=1", w, c)
    prof = cProfile.Profile()
    prof.enable()
    from streamproc.fetch.range_fetch import fetch_range

    st = load_store(str(tmp_path / "s1"))
    _, w, c = measured(lambda: [fetch_range(client, st, r) for r in ranges])
    prof.disable()
    print("fetch p=1 profiled", w, c)
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(35)
    print(s.getvalue())
