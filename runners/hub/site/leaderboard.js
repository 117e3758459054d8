// Sortable tables: a click (or Enter) on a column header sorts the rows by that column, numbers as
// numbers, empty cells last; a second click reverses the order. Plain DOM, nothing fetched.
"use strict";

function sortKey(cell, type) {
  const raw = cell.dataset.sort !== undefined ? cell.dataset.sort : cell.textContent.trim();
  if (type === "number") {
    const value = parseFloat(raw);
    return Number.isNaN(value) ? null : value;
  }
  return raw === "" ? null : raw.toLowerCase();
}

function sortTable(table, column, header) {
  const type = header.dataset.type;
  const ascending = header.getAttribute("aria-sort") !== "ascending";
  const body = table.tBodies[0];
  const rows = Array.from(body.rows);
  rows.sort((a, b) => {
    const x = sortKey(a.cells[column], type);
    const y = sortKey(b.cells[column], type);
    if (x === null && y === null) return 0;
    if (x === null) return 1; // empty cells last, whichever the direction
    if (y === null) return -1;
    const order = type === "number" ? x - y : x.localeCompare(y);
    return ascending ? order : -order;
  });
  for (const row of rows) body.appendChild(row);
  for (const other of header.parentNode.children) other.removeAttribute("aria-sort");
  header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
}

document.addEventListener("DOMContentLoaded", () => {
  for (const table of document.querySelectorAll("table.sortable")) {
    const headers = table.tHead ? Array.from(table.tHead.rows[0].cells) : [];
    headers.forEach((header, column) => {
      if (!header.dataset.type || header.dataset.type === "nosort") return;
      header.tabIndex = 0;
      header.addEventListener("click", () => sortTable(table, column, header));
      header.addEventListener("keydown", (event) => {
        if (event.key === "Enter") sortTable(table, column, header);
      });
    });
  }
});
