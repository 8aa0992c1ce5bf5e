export { createDeadLetters } from "./dead-letters.ts";
