/** Profile view widget: placeholder until the view lands. */
function render({ el }) {
  el.textContent = "profile view";
}
export default { render };
