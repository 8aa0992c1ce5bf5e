ALTER TABLE `skipped_test_orders` ADD `order_name` text;--> statement-breakpoint
ALTER TABLE `skipped_test_orders` ADD `reason` text DEFAULT 'test' NOT NULL;--> statement-breakpoint
CREATE INDEX `skipped_test_orders_name` ON `skipped_test_orders` (`shop`,`order_name`);