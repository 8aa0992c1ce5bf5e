CREATE TABLE `retired_order_links` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`shop` text NOT NULL,
	`source_order_id` text NOT NULL,
	`provider_base_url` text,
	`store_id` integer NOT NULL,
	`order_id` integer NOT NULL,
	`order_name` text,
	`reason` text NOT NULL,
	`retired_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `retired_order_links_order` ON `retired_order_links` (`shop`,`source_order_id`);--> statement-breakpoint
ALTER TABLE `order_links` ADD `provider_base_url` text;--> statement-breakpoint
CREATE INDEX `order_links_provider_order` ON `order_links` (`order_id`);