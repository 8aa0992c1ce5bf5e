CREATE TABLE `backfills` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`shop` text NOT NULL,
	`since` text,
	`until` text,
	`cursor` text,
	`done` integer DEFAULT 0 NOT NULL,
	`total` integer,
	`status` text NOT NULL,
	`error` text,
	`started_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`completed_at` text
);
--> statement-breakpoint
CREATE TABLE `fulfillment_links` (
	`shop` text NOT NULL,
	`source_order_id` text NOT NULL,
	`source_fulfillment_id` text NOT NULL,
	`fulfillment_id` integer NOT NULL,
	`hash` text NOT NULL,
	`updated_at` text NOT NULL,
	PRIMARY KEY(`shop`, `source_order_id`, `source_fulfillment_id`)
);
--> statement-breakpoint
CREATE TABLE `intents` (
	`shop` text NOT NULL,
	`source_order_id` text NOT NULL,
	`key` text NOT NULL,
	`kind` text NOT NULL,
	`status` text NOT NULL,
	`result_id` integer,
	`attempts` integer DEFAULT 1 NOT NULL,
	`started_at` text NOT NULL,
	`completed_at` text,
	PRIMARY KEY(`shop`, `source_order_id`, `key`)
);
--> statement-breakpoint
CREATE TABLE `line_item_links` (
	`shop` text NOT NULL,
	`source_order_id` text NOT NULL,
	`line_item_id` integer NOT NULL,
	`source_line_item_id` text NOT NULL,
	`hash` text NOT NULL,
	`canceled_at` text,
	`created_at` text NOT NULL,
	PRIMARY KEY(`shop`, `source_order_id`, `line_item_id`)
);
--> statement-breakpoint
CREATE TABLE `order_failures` (
	`shop` text NOT NULL,
	`source_order_id` text NOT NULL,
	`result` text NOT NULL,
	`error` text NOT NULL,
	`failed_at` text NOT NULL,
	PRIMARY KEY(`shop`, `source_order_id`)
);
--> statement-breakpoint
CREATE TABLE `order_links` (
	`shop` text NOT NULL,
	`source_order_id` text NOT NULL,
	`store_id` integer NOT NULL,
	`order_id` integer NOT NULL,
	`order_name` text,
	`order_hash` text NOT NULL,
	`synced_version` text,
	`canceled_at` text,
	`last_result` text,
	`last_error` text,
	`last_synced_at` text,
	`created_at` text NOT NULL,
	PRIMARY KEY(`shop`, `source_order_id`)
);
--> statement-breakpoint
CREATE INDEX `order_links_name` ON `order_links` (`shop`,`order_name`);--> statement-breakpoint
CREATE TABLE `privacy_requests` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`shop` text NOT NULL,
	`topic` text NOT NULL,
	`summary` text NOT NULL,
	`received_at` text NOT NULL,
	`due_by` text NOT NULL,
	`completed_at` text
);
--> statement-breakpoint
CREATE TABLE `shops` (
	`shop` text PRIMARY KEY NOT NULL,
	`status` text DEFAULT 'active' NOT NULL,
	`paused_reason` text,
	`store_id` integer,
	`provider_environment` text DEFAULT 'sandbox' NOT NULL,
	`provider_base_url` text,
	`provider_auth_url` text,
	`provider_audience` text,
	`provider_client_id` text,
	`provider_client_secret_sealed` text,
	`access_token_sealed` text,
	`scopes` text,
	`store_currency` text,
	`shop_currency` text,
	`protection_variant_ids` text DEFAULT '[]' NOT NULL,
	`location_map` text DEFAULT '{}' NOT NULL,
	`default_location_id` integer,
	`installed_at` text,
	`uninstalled_at` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `sync_checkpoints` (
	`shop` text PRIMARY KEY NOT NULL,
	`last_reconciled_at` text NOT NULL
);
