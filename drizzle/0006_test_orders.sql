CREATE TABLE `skipped_test_orders` (
	`shop` text NOT NULL,
	`source_order_id` text NOT NULL,
	`skipped_at` text NOT NULL,
	PRIMARY KEY(`shop`, `source_order_id`)
);
--> statement-breakpoint
ALTER TABLE `shops` ADD `send_test_orders` integer DEFAULT false NOT NULL;