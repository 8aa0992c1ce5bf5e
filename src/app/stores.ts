import { BackfillRepository, CheckpointRepository } from "../backfill/index.ts";
import type { Env } from "../config/env.ts";
import { ClaimRepository } from "../features/claims/repository.ts";
import { SnapshotStore } from "../ingest/snapshot-store.ts";
import { type LiveShare, OrderQueues } from "../queue/order-queues.ts";
import { SealedSessionStorage } from "../shopify/install/index.ts";
import {
  createLinkRepository,
  type LinkRepository,
  PrivacyRequestRepository,
  ProviderEventRepository,
  ProviderWebhookSecretRepository,
  ShopRepository,
} from "../store/index.ts";
import type { Infrastructure } from "./infrastructure.ts";

/** Every store of the connector, built once per process: SQLite repositories and Redis stores. */
export interface Stores {
  shops: ShopRepository;
  links: LinkRepository;
  /** Shopify sessions in SQLite, tokens sealed (ADR 0005). */
  sessions: SealedSessionStorage;
  backfills: BackfillRepository;
  checkpoints: CheckpointRepository;
  privacyRequests: PrivacyRequestRepository;
  /** Order snapshots the webhooks left, for the worker to sync from. */
  snapshots: SnapshotStore;
  /** The sync and dead-letter queues. */
  queues: OrderQueues;
  /** The provider's events as received, its claims per shop, its webhook secrets (sealed). */
  providerEvents: ProviderEventRepository;
  claims: ClaimRepository;
  webhookSecrets: ProviderWebhookSecretRepository;
}

/** The store budget the sync queue orders live jobs by: the limiter's own settings. */
export const liveShareOf = (env: Env): LiveShare => ({
  limit: env.PROVIDER_RATE_LIMIT,
  windowMs: env.PROVIDER_RATE_WINDOW_MS,
});

export function createStores(infra: Infrastructure): Stores {
  const { db, config, prefix } = infra;
  return {
    shops: new ShopRepository(db),
    links: createLinkRepository(db),
    sessions: new SealedSessionStorage(db, infra.secrets),
    backfills: new BackfillRepository(db),
    checkpoints: new CheckpointRepository(db),
    privacyRequests: new PrivacyRequestRepository(db),
    snapshots: new SnapshotStore(infra.jobRedis, { prefix }),
    queues: new OrderQueues(
      infra.redis,
      prefix,
      { attempts: config.env.SYNC_ATTEMPTS, delayMs: config.env.SYNC_RETRY_DELAY_MS },
      { liveShare: liveShareOf(config.env), syncShards: config.env.SYNC_QUEUE_SHARDS },
    ),
    providerEvents: new ProviderEventRepository(db),
    claims: new ClaimRepository(db),
    webhookSecrets: new ProviderWebhookSecretRepository(db),
  };
}
