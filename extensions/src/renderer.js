/**
 * The renderer of application/vnd.tensorkit.recording+json. Every tensorkit widget output
 * carries that recording next to its widget view; this renderer is ranked above the widget
 * view, so it decides which one shows:
 *
 * - the live widget, when the notebook's widget manager has the output's model with an open
 *   comm to a kernel (the cell ran in this session): the widget view renderer that
 *   @jupyter-widgets/jupyterlab-manager registered on the same notebook draws it, inside
 *   this renderer;
 * - otherwise the recorded view (graph, replay of the backward steps, profile: all in the
 *   browser) under a note that it is a saved recording and the kernel is not running. When
 *   the manager is still restoring models (a notebook just opened), the choice is made again
 *   once it has.
 */

import { Panel, Widget } from "@lumino/widgets";
import {
  MIME_TYPE,
  RECORDING_NOTE,
  SAVED_NOTE,
  renderRecording,
} from "../../widgets/src/recording_view.js";

export { MIME_TYPE };
export const WIDGET_MIME_TYPE = "application/vnd.jupyter.widget-view+json";

/**
 * The recording in a MIME model's data: an object, or JSON text (a file opened as text).
 * @param {unknown} value
 */
export function parseRecording(value) {
  if (typeof value !== "string") return value;
  try {
    return JSON.parse(value);
  } catch (error) {
    return { problem: `invalid JSON (${error.message})` };
  }
}

export class RecordingRenderer extends Panel {
  /**
   * @param {object} options the renderer options JupyterLab passes to a factory
   * @param {object | null} rendermime the notebook's registry, to find its widget view
   *   renderer (null outside notebooks: the recorded view always shows)
   */
  constructor(options, rendermime = null) {
    super();
    this.addClass("tk-recording-renderer");
    this._options = options;
    this._rendermime = rendermime;
    this._cleanup = null;
    this._watch = null;
  }

  /**
   * Show the live widget or the recorded view. The recorded view shows at once when the
   * notebook's widget manager is not there yet (no kernel session), and gives way to the live
   * widget if the manager turns out to hold the model.
   */
  async renderModel(model) {
    const token = this._begin();
    const live = this._widgetRenderer(model);
    const pending = live && managerOf(live);
    if (!pending) {
      if (live) live.dispose();
      this._showRecorded(model);
      return;
    }
    const early = await Promise.race([pending, nextTask()]);
    if (!early && !this._stale(token)) this._showRecorded(model);
    const manager = early || (await pending);
    const id = model.data[WIDGET_MIME_TYPE].model_id;
    if (!this._stale(token) && (await isLive(manager, id)) && !this._stale(token)) {
      this._clear();
      this.addWidget(live);
      await live.renderModel(model);
      return;
    }
    live.dispose();
    if (this._stale(token)) return;
    if (early) this._showRecorded(model);
    if (!manager.restoredStatus && manager.restored) this._rerenderWhenRestored(manager, model);
  }

  dispose() {
    if (this.isDisposed) return;
    this._clear();
    super.dispose();
  }

  /** The notebook's widget view renderer for a trusted output with a widget view; else null. */
  _widgetRenderer(model) {
    const view = model.data[WIDGET_MIME_TYPE];
    if (!view || !view.model_id || !model.trusted || !this._rendermime) return null;
    const factory = this._rendermime.getFactory(WIDGET_MIME_TYPE);
    if (!factory) return null;
    return factory.createRenderer({ ...this._options, mimeType: WIDGET_MIME_TYPE });
  }

  _rerenderWhenRestored(manager, model) {
    const handler = () => {
      this._unwatch();
      void this.renderModel(model);
    };
    manager.restored.connect(handler);
    this._watch = { signal: manager.restored, handler };
  }

  /** Start a rendering: clear the last one; returns its token (see _stale). */
  _begin() {
    this._clear();
    this._token = (this._token || 0) + 1;
    return this._token;
  }

  /** Whether a later rendering (or disposal) replaced the one of `token`. */
  _stale(token) {
    return this.isDisposed || token !== this._token;
  }

  _unwatch() {
    if (this._watch) this._watch.signal.disconnect(this._watch.handler);
    this._watch = null;
  }

  _showRecorded(model) {
    const recording = parseRecording(model.data[this._options.mimeType]);
    const host = new Widget();
    host.addClass("tk-recording-host");
    this.addWidget(host);
    if (recording && recording.problem) {
      host.node.textContent = `Cannot show this tensorkit recording: ${recording.problem}.`;
      return;
    }
    // A widget's output says why its widget is not there; a recording shown as such (a file,
    // tk.notebook.open(...)) says what it is.
    const note = model.data[WIDGET_MIME_TYPE] ? SAVED_NOTE : RECORDING_NOTE;
    this._cleanup = renderRecording(host.node, recording, { note });
  }

  _clear() {
    if (this._cleanup) this._cleanup();
    this._cleanup = null;
    this._unwatch();
    for (const child of [...this.widgets]) child.dispose();
  }
}

/**
 * The promise of the widget manager behind a widget view renderer of
 * @jupyter-widgets/jupyterlab-manager 5 (its WidgetRenderer resolves it once the notebook has
 * a kernel session), or null for a renderer without one.
 */
function managerOf(renderer) {
  return (renderer._manager && renderer._manager.promise) || null;
}

/** Resolves to null after the current task (a manager already there wins the race). */
function nextTask() {
  return new Promise((resolve) => setTimeout(() => resolve(null), 0));
}

/** Whether `manager` holds model `id` with an open comm to a running kernel. */
async function isLive(manager, id) {
  if (!manager.has_model(id)) return false;
  try {
    const widgetModel = await manager.get_model(id);
    return Boolean(widgetModel && widgetModel.comm_live);
  } catch {
    return false;
  }
}

/**
 * A rendermime factory of recording renderers; with a notebook's `rendermime`, they show the
 * live widget when it is alive.
 */
export function recordingFactory(rendermime = null) {
  return {
    safe: true,
    mimeTypes: [MIME_TYPE],
    defaultRank: RANK,
    createRenderer: (options) => new RecordingRenderer(options, rendermime),
  };
}

/** Ahead of the widget view (rank -10 in jupyterlab-manager), so this renderer decides. */
export const RANK = -20;
