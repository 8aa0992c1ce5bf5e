CREATE TABLE `claim_settings` (
	`shop` text PRIMARY KEY NOT NULL,
	`tag_orders` integer DEFAULT false NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `provider_claims` (
	`shop` text NOT NULL,
	`kind` text NOT NULL,
	`claim_id` text NOT NULL,
	`external_id` text,
	`status` text,
	`order_id` integer,
	`source_order_id` text,
	`order_name` text,
	`updated_on` text NOT NULL,
	`last_event_id` text NOT NULL,
	`tagged_status` text,
	`tag_error` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	PRIMARY KEY(`shop`, `kind`, `claim_id`)
);
--> statement-breakpoint
CREATE INDEX `provider_claims_order` ON `provider_claims` (`shop`,`source_order_id`);--> statement-breakpoint
CREATE TABLE `provider_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`provider_base_url` text NOT NULL,
	`store_id` integer NOT NULL,
	`event_id` text NOT NULL,
	`shops` text NOT NULL,
	`topic` text,
	`kind` text NOT NULL,
	`api_version` text,
	`sent_at` text NOT NULL,
	`received_at` text NOT NULL,
	`processed_at` text,
	`outcome` text,
	`payload` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `provider_events_event` ON `provider_events` (`provider_base_url`,`store_id`,`event_id`);--> statement-breakpoint
CREATE INDEX `provider_events_store` ON `provider_events` (`provider_base_url`,`store_id`,`received_at`);--> statement-breakpoint
CREATE TABLE `provider_webhook_secrets` (
	`provider_base_url` text NOT NULL,
	`client_id` text NOT NULL,
	`secret_sealed` text NOT NULL,
	`updated_at` text NOT NULL,
	PRIMARY KEY(`provider_base_url`, `client_id`)
);
