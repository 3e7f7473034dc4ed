"""The in-memory table pickles after its reads built their decoders (the explorer copies a settled world by
pickle for each schedule; ``--jobs`` workers send results back): the readers are made again on first use."""

from __future__ import annotations

import pickle

from ecs_guardrail.adapters.store.memory import MemoryTable


def test_a_table_that_was_read_by_fields_and_by_values_pickles_and_reads_the_same():
    table = MemoryTable()
    for i in range(3):
        table.put({"pk": "P", "sk": f"S{i}", "kind": "crash", "n": i, "gsi1pk": "G", "gsi1sk": f"T{i}"})
    before = (list(table.query("P", fields=("kind", "n"))), list(table.query_values("P", ("n", "kind"))))
    copy = pickle.loads(pickle.dumps(table, pickle.HIGHEST_PROTOCOL))  # TypeError before: a msgspec Decoder
    after = (list(copy.query("P", fields=("kind", "n"))), list(copy.query_values("P", ("n", "kind"))))
    assert after == before
    assert before[1] == [(0, "crash"), (1, "crash"), (2, "crash")]
