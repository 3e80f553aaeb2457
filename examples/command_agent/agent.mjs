// A command-mode agent for evolve, in JavaScript (Node.js, no packages).
//
// evolve runs it once per episode, in its sandbox, with one JSON request on stdin and reads
// one JSON result from stdout (docs/command-agents.md). It plans every call up front: evolve
// replays the calls in the episode's world after the program has ended, so a call's result
// is not seen here. This one saves notes (no lookup needed) and, for other tasks, looks the
// person up and marks the task done: enough to show the protocol, not a good agent.

import { readFileSync } from "node:fs";

const request = JSON.parse(readFileSync(0, "utf8"));
const instruction = request.task.instruction;
const tools = new Set(request.tools.map((t) => t.name));
const calls = [];

// "Save a note titled 'Pancakes' listing the ingredients: flour; milk; eggs; butter."
const note = instruction.match(/titled '([^']+)' listing the ingredients: (.+?)\.?$/);
if (note && tools.has("simple_note__create_note")) {
  const lines = note[2].split(";").map((s) => s.trim()).filter(Boolean);
  calls.push({
    tool: "simple_note__create_note",
    arguments: { title: note[1], content: lines.join("\n") },
    thought: "a note needs no lookup",
  });
} else {
  const person = instruction.match(/^(?:Send|Email) ([A-Z][a-z]+ [A-Z][a-z]+)/);
  if (person && tools.has("phone__search_contacts")) {
    calls.push({ tool: "phone__search_contacts", arguments: { query: person[1] } });
  }
}
if (tools.has("supervisor__complete_task")) {
  calls.push({ tool: "supervisor__complete_task", arguments: {} });
}

const memory = request.sections.memory || "";
process.stdout.write(
  JSON.stringify({
    version: 1,
    answer: null,
    tool_calls: calls.slice(0, request.limits.max_turns),
    transcript: [
      { role: "system", content: `memory lines read: ${memory.split("\n").filter(Boolean).length}` },
    ],
    usage: { input_tokens: 0, output_tokens: 0 },
  }),
);
