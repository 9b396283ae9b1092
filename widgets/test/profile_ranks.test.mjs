import assert from "node:assert/strict";
import { test } from "node:test";

import { FakeElement } from "./fake_dom.mjs"; // installs document

const { default: profile } = await import("../src/profile.js");

const rank = (number, compute, comm, share) => ({
  rank: number,
  compute,
  comm,
  compute_ns: 3_000_000,
  backward_ns: 2_000_000,
  comm_ns: 1_000_000,
  wait_ns: 500_000,
  hidden_ns: share * 1_000_000,
  hidden_share: share,
  collectives: comm.length,
  bytes: 4096,
});
const RANKS = {
  span_ns: 4_000_000,
  comm_ns: 2_000_000,
  hidden_ns: 1_250_000,
  hidden_share: 0.625,
  ranks: [
    rank(
      0,
      [
        [0, 1_000_000, "forward"],
        [1_000_000, 3_000_000, "backward"],
      ],
      [[2_000_000, 3_000_000, ["all_reduce"]]],
      0.5,
    ),
    rank(1, [[0, 3_000_000, "backward"]], [[2_500_000, 3_500_000, ["all_reduce"]]], 0.75),
  ],
};

function rendered(data) {
  const el = new FakeElement("div");
  const model = { get: (key) => (key === "model" ? data : -1), on() {}, off() {} };
  profile.render({ model, el });
  return el;
}

test("a ranks-only model shows one track per rank and the hidden share, no op table", () => {
  const el = rendered({ timing_mode: "t", total_ops: 0, rows: [], modules: [], ranks: RANKS });
  const tracks = el.find("tk-rank-track");
  assert.deepEqual(
    tracks.map((t) => t.attributes["data-rank"]),
    ["0", "1"],
  );
  const bars = (track, lane) => track.find(lane)[0].children.map((r) => r.attributes.class);
  assert.deepEqual(bars(tracks[0], "tk-rank-compute"), ["tk-rank-forward", "tk-rank-backward"]);
  assert.deepEqual(bars(tracks[1], "tk-rank-comm"), ["tk-rank-collective"]);
  assert.equal(
    el.find("tk-rank-share")[0].textContent,
    "all ranks: 63% hidden under backward (1.25 ms of 2 ms communication)",
  );
  const summary = el.find("tk-rank-summary")[0].find("td").map((td) => td.textContent);
  assert.equal(summary[0], "rank 0");
  assert.match(summary[1], /50% hidden under backward$/);
  assert.match(summary[3], /75% hidden under backward$/);
  assert.equal(el.find("tk-profile-table").length, 0);
  assert.equal(el.find("tk-toolbar")[0].children[0].textContent, "2 ranks");
});

test("a profile with op rows and ranks shows both; one without ranks has no rank view", () => {
  const rows = [{ index: 0, name: "add", phase: "forward", host_time_ns: 5, module: "" }];
  const both = rendered({ total_ops: 1, rows, modules: [], functions: [], ranks: RANKS });
  assert.equal(both.find("tk-rank-track").length, 2);
  assert.equal(both.find("tk-profile-table").length, 1);
  const plain = rendered({ total_ops: 1, rows, modules: [], functions: [] });
  assert.equal(plain.find("tk-ranks").length, 0);
  assert.equal(plain.find("tk-toolbar")[0].children[0].textContent, "1 ops");
});
