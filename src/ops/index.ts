export { createDeadLetters, type DeadLetterOpsDeps } from "./dead-letters.ts";
export { type RotationReport, rotateSecrets, sealedSecretsProblem } from "./secrets.ts";
export {
  type BackfillStatus,
  type ConnectorStatus,
  collectStatus,
  type QueueStatus,
  type ShopStatusLine,
  type StatusDeps,
} from "./status.ts";
