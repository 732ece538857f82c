/**
 * Read the request
 *
 * Reads the person's latest message (archmax_get_history) and looks for a number of days
 * ("3 days", "one day"). Found: records it as the locked variable `days` and moves to `draft`.
 * Not found: moves to `clarify`, whose agent asks for it.
 */
import { defineCodeState } from "@archmax-ai/harness/sandbox";

const WORDS = { one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10 };

export default defineCodeState(async ({ tools }) => {
  const history = JSON.parse(await tools.archmax_get_history());
  const last = [...history.messages].reverse().find((m) => m.role === "user");
  const text = (last ? last.text : "").toLowerCase();

  const match = text.match(/\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten)\s+(?:working\s+)?days?\b/);
  if (!match) {
    return tools.archmax_advance({ to: "clarify", reason: "the request names no number of days" });
  }
  const days = WORDS[match[1]] ?? Number(match[1]);
  await tools.archmax_set_variables({ variables: { days }, lock: true });
  console.log(`days requested: ${days}`);
  return tools.archmax_advance({ to: "draft", reason: `${days} day(s) requested` });
});
