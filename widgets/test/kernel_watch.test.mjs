import assert from "node:assert/strict";
import { test } from "node:test";

import { NO_KERNEL, actionSender, noReply } from "../src/kernel_watch.js";

/** A model like anywidget's; `comm` false makes save_changes throw as ipywidgets does. */
function fakeModel({ comm = true } = {}) {
  const values = { action: "" };
  const listeners = {};
  return {
    sent: [],
    get: (name) => values[name],
    set: (name, value) => {
      values[name] = value;
    },
    save_changes() {
      if (!comm) throw new Error("Syncing error: no comm channel defined");
      this.sent.push(values.action);
    },
    on: (event, fn) => (listeners[event] = [...(listeners[event] || []), fn]),
    off: (event, fn) => (listeners[event] = (listeners[event] || []).filter((f) => f !== fn)),
    reply() {
      values.action = "";
      for (const fn of listeners["change:action"] || []) fn();
    },
    listeners,
  };
}

/** Timers run by hand. */
function manualTimers() {
  const pending = new Map();
  let next = 1;
  return {
    set: (fn) => (pending.set(next, fn), next++),
    clear: (id) => pending.delete(id),
    fire: () => [...pending.values()].forEach((fn) => fn()),
    pending,
  };
}

test("a send with no comm reports that the widget has no kernel", () => {
  const problems = [];
  const sender = actionSender(fakeModel({ comm: false }), (p) => problems.push(p));
  sender.send("next");
  assert.deepEqual(problems, [NO_KERNEL]);
});

test("no reply within the bound reports it; the reply clears it", () => {
  const model = fakeModel();
  const timers = manualTimers();
  const problems = [];
  const sender = actionSender(model, (p) => problems.push(p), { timeoutMs: 4000, timers });
  sender.send("next");
  assert.deepEqual(model.sent, ["next"]);
  timers.fire();
  assert.deepEqual(problems, [noReply(4000)]);
  assert.match(problems[0], /4 s/);
  model.reply();
  assert.deepEqual(problems, [noReply(4000), ""]);
});

test("a reply in time reports nothing but the all-clear, and stops the timer", () => {
  const model = fakeModel();
  const timers = manualTimers();
  const problems = [];
  const sender = actionSender(model, (p) => problems.push(p), { timers });
  sender.send("previous");
  model.reply();
  timers.fire();
  assert.deepEqual(problems, [""]);
  sender.stop();
  assert.equal(model.listeners["change:action"].length, 0);
});
