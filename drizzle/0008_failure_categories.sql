ALTER TABLE `order_failures` ADD `category` text;--> statement-breakpoint
ALTER TABLE `order_failures` ADD `fields` text;