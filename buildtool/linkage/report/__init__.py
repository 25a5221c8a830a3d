"""Showing the verdicts: the report model; text, JSON and GitHub renderings; the HTML page
with its SVG link graph."""
