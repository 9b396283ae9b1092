/**
 * Actions that need the kernel, sent so that a widget whose kernel is gone says so instead of
 * ignoring clicks. An action goes out through the synced `action` trait and Python clears it
 * when done (stepper_widget.py); a send that fails at once (no comm: widget state saved in the
 * notebook, or a dead kernel) or that has no reply within `timeoutMs` (a restarted or stuck
 * kernel) reports a problem, and a later reply clears it.
 */

export const REPLY_TIMEOUT_MS = 5000;
export const NO_KERNEL =
  "This widget is not connected to a kernel (its state was saved with the notebook, or the " +
  "kernel stopped): run the cell again to use it.";

/**
 * The message for an action with no reply after `timeoutMs`.
 * @param {number} timeoutMs
 */
export function noReply(timeoutMs) {
  return (
    `No reply from the kernel after ${timeoutMs / 1000} s: it may be busy, stopped or ` +
    "restarted (after a restart, run the cell again)."
  );
}

/**
 * A sender of `action`s on `model` that calls `report(problem)` with the problem ("" once a
 * reply arrives); `stop()` ends the watch.
 * @param {object} model the anywidget model
 * @param {(problem: string) => void} report
 * @param {{timeoutMs?: number, timers?: {set: Function, clear: Function}}} [options]
 */
export function actionSender(model, report, options = {}) {
  const timeoutMs = options.timeoutMs ?? REPLY_TIMEOUT_MS;
  const timers = options.timers ?? {
    set: (fn, ms) => setTimeout(fn, ms),
    clear: (id) => clearTimeout(id),
  };
  let timer = null;
  let waiting = false;
  const onAction = () => {
    if (!waiting || model.get("action") !== "") return;
    waiting = false;
    timers.clear(timer);
    report("");
  };
  model.on("change:action", onAction);
  return {
    send(action) {
      try {
        model.set("action", "");
        model.set("action", action);
        model.save_changes();
      } catch {
        report(NO_KERNEL);
        return;
      }
      waiting = true;
      timers.clear(timer);
      timer = timers.set(() => {
        if (waiting) report(noReply(timeoutMs));
      }, timeoutMs);
    },
    stop() {
      timers.clear(timer);
      model.off("change:action", onAction);
    },
  };
}
