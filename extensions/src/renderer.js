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
import { MIME_TYPE, SAVED_NOTE, renderRecording } from "../../widgets/src/recording_view.js";

export { MIME_TYPE };
export const WIDGET_MIME_TYPE = "application/vnd.jupyter.widget-view+json";
/** Bound on waiting for the widget manager of a notebook (it exists once the notebook has a
 * session context). */
export const MANAGER_WAIT_MS = 5000;

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
   * @param {string} note shown above the recorded view
   */
  constructor(options, rendermime = null, note = SAVED_NOTE) {
    super();
    this.addClass("tk-recording-renderer");
    this._options = options;
    this._rendermime = rendermime;
    this._note = note;
    this._cleanup = null;
    this._watch = null;
  }

  async renderModel(model) {
    this._clear();
    const live = await this._liveRenderer(model);
    if (live) {
      this.addWidget(live);
      await live.renderModel(model);
      return;
    }
    this._showRecorded(model);
  }

  dispose() {
    if (this.isDisposed) return;
    this._clear();
    super.dispose();
  }

  /** The widget view renderer, when the output's widget model is live; else null. */
  async _liveRenderer(model) {
    const view = model.data[WIDGET_MIME_TYPE];
    if (!view || !view.model_id || !model.trusted || !this._rendermime) return null;
    const factory = this._rendermime.getFactory(WIDGET_MIME_TYPE);
    if (!factory) return null;
    const renderer = factory.createRenderer({ ...this._options, mimeType: WIDGET_MIME_TYPE });
    const manager = await managerOf(renderer);
    if (manager && (await isLive(manager, view.model_id))) return renderer;
    renderer.dispose();
    if (manager && !manager.restoredStatus && manager.restored) {
      const handler = () => {
        this._unwatch();
        void this.renderModel(model);
      };
      manager.restored.connect(handler);
      this._watch = { signal: manager.restored, handler };
    }
    return null;
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
    this._cleanup = renderRecording(host.node, recording, { note: this._note });
  }

  _clear() {
    if (this._cleanup) this._cleanup();
    this._cleanup = null;
    this._unwatch();
    for (const child of [...this.widgets]) child.dispose();
  }
}

/**
 * The widget manager behind a widget view renderer of @jupyter-widgets/jupyterlab-manager 5
 * (its WidgetRenderer keeps it as a promise, resolved once the notebook has a kernel
 * session), or null if none comes within MANAGER_WAIT_MS.
 */
async function managerOf(renderer) {
  const pending = renderer._manager && renderer._manager.promise;
  if (!pending) return null;
  const timeout = new Promise((resolve) => setTimeout(() => resolve(null), MANAGER_WAIT_MS));
  return Promise.race([pending, timeout]);
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
export function recordingFactory(rendermime = null, note = SAVED_NOTE) {
  return {
    safe: true,
    mimeTypes: [MIME_TYPE],
    defaultRank: RANK,
    createRenderer: (options) => new RecordingRenderer(options, rendermime, note),
  };
}

/** Ahead of the widget view (rank -10 in jupyterlab-manager), so this renderer decides. */
export const RANK = -20;
