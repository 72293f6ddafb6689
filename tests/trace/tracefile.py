"""Reading a flight-recorder file (docs/api/trace.md#the-file-format) in the tests: the header,
the communicators by id, and the entries of each communicator in file order."""

import json
from pathlib import Path

HEADER_KEYS = {"format", "version", "job", "rank", "world_size", "pid", "host", "reason", "error", "wall",
               "monotonic", "clock", "resolution", "buffer", "library"}
COMM_KEYS = {"type", "comm", "rank", "nranks", "parent", "color", "key", "origin", "recorded", "dropped"}
OP_KEYS = {"type", "comm", "seq", "coll", "op", "count", "dtype", "redop", "root", "peer", "group", "stream", "sendbuff",
           "recvbuff", "file", "line", "func", "t_enter", "m_enter", "m_return", "rc"}


class Dump:
    def __init__(self, path):
        lines = [json.loads(line) for line in Path(path).read_text().splitlines()]
        self.header = lines[0]
        assert set(self.header) == HEADER_KEYS, sorted(self.header)
        assert self.header["format"] == "nccl4py-trace" and self.header["version"] == 1
        self.comms = {}
        self.ops = {}
        for line in lines[1:]:
            if line["type"] == "comm":
                assert set(line) == COMM_KEYS, sorted(line)
                assert len(line["comm"]) == 16 and int(line["comm"], 16) >= 0
                self.comms[line["comm"]] = line
                self.ops[line["comm"]] = []
            else:
                assert line["type"] == "op" and set(line) == OP_KEYS, sorted(line)
                self.ops[line["comm"]].append(line)
        for cid, ops in self.ops.items():
            seqs = [o["seq"] for o in ops]
            assert seqs == sorted(seqs), seqs
            c = self.comms[cid]
            assert c["recorded"] - c["dropped"] == len(ops)
            if ops:
                assert seqs[-1] == c["recorded"]

    def comm_of(self, origin):
        found = [c for c in self.comms.values() if c["origin"] == origin]
        assert len(found) == 1, found
        return found[0]
