CREATE TABLE "backfills" (
	"id" serial PRIMARY KEY NOT NULL,
	"shop" text NOT NULL,
	"since" text,
	"until" text,
	"cursor" text,
	"done" integer DEFAULT 0 NOT NULL,
	"total" integer,
	"status" text NOT NULL,
	"error" text,
	"started_at" text NOT NULL,
	"updated_at" text NOT NULL,
	"completed_at" text
);
--> statement-breakpoint
CREATE TABLE "fulfillment_links" (
	"shop" text NOT NULL,
	"source_order_id" text NOT NULL,
	"source_fulfillment_id" text NOT NULL,
	"fulfillment_id" bigint NOT NULL,
	"hash" text NOT NULL,
	"updated_at" text NOT NULL,
	CONSTRAINT "fulfillment_links_shop_source_order_id_source_fulfillment_id_pk" PRIMARY KEY("shop","source_order_id","source_fulfillment_id")
);
--> statement-breakpoint
CREATE TABLE "intents" (
	"shop" text NOT NULL,
	"source_order_id" text NOT NULL,
	"key" text NOT NULL,
	"kind" text NOT NULL,
	"status" text NOT NULL,
	"result_id" bigint,
	"attempts" integer DEFAULT 1 NOT NULL,
	"started_at" text NOT NULL,
	"completed_at" text,
	CONSTRAINT "intents_shop_source_order_id_key_pk" PRIMARY KEY("shop","source_order_id","key")
);
--> statement-breakpoint
CREATE TABLE "line_item_links" (
	"shop" text NOT NULL,
	"source_order_id" text NOT NULL,
	"line_item_id" bigint NOT NULL,
	"source_line_item_id" text NOT NULL,
	"hash" text NOT NULL,
	"canceled_at" text,
	"created_at" text NOT NULL,
	CONSTRAINT "line_item_links_shop_source_order_id_line_item_id_pk" PRIMARY KEY("shop","source_order_id","line_item_id")
);
--> statement-breakpoint
CREATE TABLE "order_failures" (
	"shop" text NOT NULL,
	"source_order_id" text NOT NULL,
	"order_name" text,
	"result" text NOT NULL,
	"error" text NOT NULL,
	"category" text,
	"fields" text,
	"failed_at" text NOT NULL,
	CONSTRAINT "order_failures_shop_source_order_id_pk" PRIMARY KEY("shop","source_order_id")
);
--> statement-breakpoint
CREATE TABLE "order_links" (
	"shop" text NOT NULL,
	"source_order_id" text NOT NULL,
	"store_id" bigint NOT NULL,
	"provider_base_url" text,
	"order_id" bigint NOT NULL,
	"order_name" text,
	"order_hash" text NOT NULL,
	"synced_version" text,
	"canceled_at" text,
	"last_result" text,
	"last_error" text,
	"last_synced_at" text,
	"created_at" text NOT NULL,
	CONSTRAINT "order_links_shop_source_order_id_pk" PRIMARY KEY("shop","source_order_id")
);
--> statement-breakpoint
CREATE TABLE "privacy_requests" (
	"id" serial PRIMARY KEY NOT NULL,
	"shop" text NOT NULL,
	"topic" text NOT NULL,
	"summary" text NOT NULL,
	"received_at" text NOT NULL,
	"due_by" text NOT NULL,
	"completed_at" text
);
--> statement-breakpoint
CREATE TABLE "retired_order_links" (
	"id" serial PRIMARY KEY NOT NULL,
	"shop" text NOT NULL,
	"source_order_id" text NOT NULL,
	"provider_base_url" text,
	"store_id" bigint NOT NULL,
	"order_id" bigint NOT NULL,
	"order_name" text,
	"reason" text NOT NULL,
	"retired_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "session" (
	"id" text PRIMARY KEY NOT NULL,
	"shop" text NOT NULL,
	"state" text NOT NULL,
	"isOnline" boolean DEFAULT false NOT NULL,
	"scope" text,
	"expires" timestamp,
	"accessToken" text NOT NULL,
	"userId" bigint,
	"firstName" text,
	"lastName" text,
	"email" text,
	"accountOwner" boolean,
	"locale" text,
	"collaborator" boolean,
	"emailVerified" boolean,
	"refreshToken" text,
	"refreshTokenExpires" timestamp
);
--> statement-breakpoint
CREATE TABLE "shops" (
	"shop" text PRIMARY KEY NOT NULL,
	"status" text DEFAULT 'active' NOT NULL,
	"paused_reason" text,
	"store_id" bigint,
	"provider_environment" text DEFAULT 'sandbox' NOT NULL,
	"provider_base_url" text,
	"provider_auth_url" text,
	"provider_audience" text,
	"provider_client_id" text,
	"provider_client_secret_sealed" text,
	"access_token_sealed" text,
	"access_token_expires_at" text,
	"access_token_refresh_at" text,
	"refresh_token_sealed" text,
	"refresh_token_expires_at" text,
	"scopes" text,
	"store_currency" text,
	"shop_currency" text,
	"shop_timezone" text,
	"send_test_orders" boolean DEFAULT false NOT NULL,
	"protection_variant_ids" text DEFAULT '[]' NOT NULL,
	"location_map" text DEFAULT '{}' NOT NULL,
	"default_location_id" bigint,
	"installed_at" text,
	"uninstalled_at" text,
	"subscriptions_checked_at" text,
	"subscriptions_error" text,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "skipped_test_orders" (
	"shop" text NOT NULL,
	"source_order_id" text NOT NULL,
	"skipped_at" text NOT NULL,
	CONSTRAINT "skipped_test_orders_shop_source_order_id_pk" PRIMARY KEY("shop","source_order_id")
);
--> statement-breakpoint
CREATE TABLE "sync_checkpoints" (
	"shop" text PRIMARY KEY NOT NULL,
	"last_reconciled_at" text NOT NULL
);
--> statement-breakpoint
CREATE INDEX "order_links_name" ON "order_links" USING btree ("shop","order_name");--> statement-breakpoint
CREATE INDEX "order_links_provider_order" ON "order_links" USING btree ("order_id");--> statement-breakpoint
CREATE INDEX "retired_order_links_order" ON "retired_order_links" USING btree ("shop","source_order_id");