import assert from "node:assert/strict";
import { test } from "node:test";

import {
  COLUMNS,
  blockAt,
  byteTicks,
  cellText,
  indexTicks,
  linkedIndices,
  groupBars,
  hiddenText,
  nextSort,
  niceStep,
  rankTracks,
  sortRows,
  stateTotals,
  timeTicks,
  timelineScale,
  visibleColumns,
} from "../src/profile_logic.js";

const column = (key) => COLUMNS.find((c) => c.key === key);

const row = (index, name, phase, forward_index, host_time_ns, alloc_bytes) => ({
  index,
  name,
  phase,
  forward_index,
  host_time_ns,
  alloc_bytes,
});
const ROWS = [
  row(0, "matmul", "forward", null, 300, 96),
  row(1, "add", "forward", null, 50, null),
  row(2, "sum", "backward", 1, 50, 8),
  row(3, "Add", "backward", 1, 900, 4),
];

test("niceStep, indexTicks and byteTicks give round axis ticks", () => {
  assert.equal(niceStep(10, 5), 2);
  assert.equal(niceStep(7, 5), 2);
  assert.equal(niceStep(0.3, 4), 0.1);
  assert.equal(niceStep(100, 4), 50);
  assert.deepEqual(indexTicks(0, 10), [0, 2, 4, 6, 8, 10]);
  assert.deepEqual(indexTicks(0, 3), [0, 1, 2, 3]);
  assert.deepEqual(indexTicks(5, 7), [5, 6, 7]);
  const bytes = byteTicks(200);
  assert.deepEqual(bytes.ticks, [0, 50, 100, 150, 200]);
  assert.equal(bytes.top, 200);
  assert.deepEqual(bytes.labels, ["0 B", "50 B", "100 B", "150 B", "200 B"]);
  const mib = byteTicks(1.4 * 2 ** 20);
  assert.deepEqual(mib.labels, ["0 MiB", "0.5 MiB", "1 MiB", "1.5 MiB"]);
  assert.deepEqual(mib.ticks, [0, 0.5, 1, 1.5].map((t) => t * 2 ** 20));
  assert.equal(mib.top, 1.5 * 2 ** 20);
  assert.equal(byteTicks(2 ** 20).top, 2 ** 20); // a round maximum is the top tick
  assert.deepEqual(byteTicks(0).ticks, [0, 1]);
});

test("nextSort: numbers start descending, text ascending, a second click reverses", () => {
  const time = nextSort(null, column("host_time"));
  assert.deepEqual(time, { key: "host_time", dir: "descending" });
  assert.deepEqual(nextSort(time, column("host_time")), { key: "host_time", dir: "ascending" });
  assert.deepEqual(nextSort(time, column("name")), { key: "name", dir: "ascending" });
});

test("sortRows orders numbers and text, ties by index, unknown values last", () => {
  const order = (key, dir) => sortRows(ROWS, column(key), dir).map((r) => r.index);
  assert.deepEqual(order("host_time", "descending"), [3, 0, 1, 2]);
  assert.deepEqual(order("host_time", "ascending"), [1, 2, 0, 3]);
  assert.deepEqual(order("bytes", "descending"), [0, 2, 3, 1]);
  assert.deepEqual(order("bytes", "ascending"), [3, 2, 0, 1]);
  assert.deepEqual(order("phase", "ascending"), [2, 3, 0, 1]);
  assert.deepEqual(order("phase", "descending"), [0, 1, 2, 3]);
  assert.deepEqual(ROWS.map((r) => r.index), [0, 1, 2, 3]); // the input is not reordered
});

test("visibleColumns hides columns without data; cellText formats", () => {
  const keys = (has) => visibleColumns({ has }).map((c) => c.key);
  assert.deepEqual(keys({}), ["index", "name", "phase", "module", "host_time"]);
  assert.ok(keys({ gpu_time: true, memory: true }).includes("gpu_time"));
  assert.ok(keys({ memory: true }).includes("bytes"));
  assert.equal(cellText(column("host_time"), ROWS[0]), "300 ns");
  assert.equal(cellText(column("bytes"), ROWS[0]), "96 B");
  assert.equal(cellText(column("bytes"), ROWS[1]), "");
  const shapes = { input_shapes: [[2, 3], null], output_shapes: [[]] };
  assert.equal(cellText(column("shapes"), shapes), "2x3, ? -> scalar");
});

test("linkedIndices joins a forward op and the backward ops its rule ran", () => {
  assert.deepEqual([...linkedIndices(ROWS, 1)].sort(), [2, 3]);
  assert.deepEqual([...linkedIndices(ROWS, 2)].sort(), [1, 3]);
  assert.equal(linkedIndices(ROWS, 0).size, 0);
  assert.equal(linkedIndices(ROWS, -1).size, 0);
});

test("timelineScale maps op index and bytes into the box, as step paths", () => {
  const memory = {
    index: [0, 1, 2, 3],
    allocated: [0, 100, 50, 200],
    reserved: [0, 100, 50, 200],
    peak: [0, 100, 100, 200],
    stride: 1,
  };
  const scale = timelineScale(memory, 400, 100);
  assert.equal(scale.top, 200);
  assert.deepEqual(scale.yTicks, [0, 50, 100, 150, 200]);
  assert.deepEqual(scale.xTicks, [0, 1, 2, 3]);
  assert.equal(scale.x(0), 0);
  assert.equal(scale.x(4), 400);
  assert.equal(scale.y(200), 0);
  assert.equal(scale.y(0), 100);
  assert.equal(
    scale.paths.allocated,
    "M0.0,100.0L100.0,100.0L100.0,50.0L200.0,50.0L200.0,75.0L300.0,75.0L300.0,0.0L400.0,0.0",
  );
  assert.equal(scale.indexAt(250), 2);
  assert.equal(scale.indexAt(0), 0);
  assert.equal(scale.indexAt(399), 3);
  const gaps = timelineScale({ ...memory, reserved: [null, 10, null, 20] }, 400, 100);
  assert.equal((gaps.paths.reserved.match(/M/g) || []).length, 2);
});

test("blockAt and stateTotals reduce each block's history at an event", () => {
  const blocks = [
    {
      history: [
        [1, "in_use", 512],
        [3, "cached", 512],
        [4, "in_use", 128],
        [6, "cached", 128],
        [7, "returned", 128],
      ],
    },
    { history: [[2, "in_use", 256]] },
  ];
  assert.deepEqual(blockAt(blocks[0].history, 0), { state: "none", size: 0 });
  assert.deepEqual(blockAt(blocks[0].history, 3), { state: "cached", size: 512 });
  assert.deepEqual(stateTotals(blocks, 2), { in_use: 768, cached: 0, returned: 0 });
  assert.deepEqual(stateTotals(blocks, 3), { in_use: 256, cached: 512, returned: 0 });
  assert.deepEqual(stateTotals(blocks, 5), { in_use: 384, cached: 0, returned: 0 });
  assert.deepEqual(stateTotals(blocks, 9), { in_use: 256, cached: 0, returned: 128 });
});

test("groupBars scales phases by the largest group", () => {
  const bars = groupBars(
    [
      { module: "net.0", total_ns: 400, host_ns: { forward: 100, backward: 300 } },
      { module: "net.1", total_ns: 200, host_ns: { forward: 200 } },
    ],
    "module",
  );
  assert.deepEqual(bars.map((b) => b.name), ["net.0", "net.1"]);
  assert.deepEqual(bars[0].parts.map((p) => p.fraction), [0.25, 0.75]);
  assert.deepEqual(bars[1].parts, [{ phase: "forward", ns: 200, fraction: 0.5 }]);
  const functions = groupBars([{ function: "conv2d", total_ns: 5, host_ns: { forward: 5 } }], "function");
  assert.equal(functions[0].name, "conv2d");
});

const RANKS = {
  span_ns: 10_000_000,
  comm_ns: 5_000_000,
  hidden_ns: 2_000_000,
  hidden_share: 0.4,
  ranks: [
    {
      rank: 0,
      compute: [
        [0, 2_000_000, "forward"],
        [2_000_000, 6_000_000, "backward"],
      ],
      comm: [[4_000_000, 8_000_000, ["all_reduce"]]],
      compute_ns: 6_000_000,
      comm_ns: 4_000_000,
      wait_ns: 2_000_000,
      hidden_ns: 2_000_000,
      hidden_share: 0.5,
      collectives: 2,
      bytes: 2048,
    },
    {
      rank: 1,
      compute: [[0, 9_000_000, "backward"]],
      comm: [[9_999_000, 10_000_000, ["all_reduce", "barrier"]]],
      compute_ns: 9_000_000,
      comm_ns: 1_000,
      wait_ns: 0,
      hidden_ns: 0,
      hidden_share: 0,
      collectives: 1,
      bytes: 0,
    },
  ],
};

test("rankTracks places each rank's compute and communication bars on one clock", () => {
  const layout = rankTracks(RANKS, 500);
  assert.equal(layout.x(5_000_000), 250);
  assert.deepEqual(
    layout.tracks.map((t) => t.rank),
    [0, 1],
  );
  const [zero, one] = layout.tracks;
  assert.deepEqual(
    zero.compute.map(({ x, w, phase }) => [x, w, phase]),
    [
      [0, 100, "forward"],
      [100, 200, "backward"],
    ],
  );
  assert.deepEqual(
    zero.comm.map(({ x, w }) => [x, w]),
    [[200, 200]],
  );
  assert.equal(zero.comm[0].title, "all_reduce 4 ms");
  assert.equal(zero.compute[1].title, "backward 4 ms");
  assert.equal(one.comm[0].w, 1); // 1 us would be 0.05 px: drawn 1 px wide
  assert.equal(one.comm[0].title, "all_reduce, barrier 1 µs");
  assert.match(zero.summary, /compute 6 ms · communication 4 ms \(2 collectives, 2 KiB/);
  assert.match(zero.summary, /waited 2 ms\) · 50% hidden under backward$/);
  assert.match(one.summary, /0% hidden under backward$/);
  assert.deepEqual(layout.ticks, [0, 2e6, 4e6, 6e6, 8e6, 10e6]);
});

test("timeTicks and hiddenText", () => {
  assert.deepEqual(timeTicks(1000, 5), [0, 200, 400, 600, 800, 1000]);
  assert.deepEqual(timeTicks(900, 5), [0, 200, 400, 600, 800]);
  assert.equal(hiddenText(null), "no communication");
  assert.equal(hiddenText(0.123), "12% hidden under backward");
  assert.equal(hiddenText(1), "100% hidden under backward");
});
