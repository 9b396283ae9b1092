/**
 * A minimal DOM for the widgets' node tests: elements that record their attributes (as
 * strings, as the DOM keeps them) and children (text as `{ text }`), and a `document` that
 * makes them. `el.find(name)` lists the descendants whose tag or class is `name`.
 */
export class FakeElement {
  constructor(tag) {
    this.tagName = tag.toUpperCase();
    this.attributes = {};
    this.children = [];
    this.textContent = "";
    this.classList = { toggle: () => {} };
  }
  setAttribute(name, value) {
    this.attributes[name] = String(value);
  }
  append(...children) {
    for (const child of children) {
      this.children.push(typeof child === "string" ? { text: child } : child);
    }
  }
  replaceChildren(...children) {
    this.children = [];
    this.append(...children.filter((c) => c !== ""));
  }
  addEventListener() {}
  remove() {}
  get className() {
    return this.attributes.class || "";
  }
  /** Every descendant whose tag or class is `name`, depth first. */
  find(name) {
    const found = [];
    const walk = (el) => {
      for (const child of el.children || []) {
        if (!(child instanceof FakeElement)) continue; // a text child
        if (child.tagName === name.toUpperCase() || child.className.split(" ").includes(name)) {
          found.push(child);
        }
        walk(child);
      }
    };
    walk(this);
    return found;
  }
}

globalThis.document = {
  createElement: (tag) => new FakeElement(tag),
  createElementNS: (_, tag) => new FakeElement(tag),
};
