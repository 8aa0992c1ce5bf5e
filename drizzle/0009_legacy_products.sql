CREATE TABLE `catalog_products` (
	`shop` text NOT NULL,
	`store_id` integer NOT NULL,
	`provider_base_url` text NOT NULL,
	`handle` text NOT NULL,
	`product_id` integer NOT NULL,
	`title` text,
	`status` text NOT NULL,
	`variants` integer NOT NULL,
	`body_digest` text,
	`last_import_id` integer,
	`imported_at` text NOT NULL,
	`deleted_on` text,
	PRIMARY KEY(`shop`, `store_id`, `provider_base_url`, `handle`)
);
--> statement-breakpoint
CREATE INDEX `catalog_products_product` ON `catalog_products` (`product_id`);--> statement-breakpoint
CREATE TABLE `product_import_rows` (
	`import_id` integer NOT NULL,
	`position` integer NOT NULL,
	`line` integer NOT NULL,
	`handle` text NOT NULL,
	`body` text,
	`body_digest` text,
	`outcome` text NOT NULL,
	`problems` text,
	`product_id` integer,
	`sent_at` text,
	`done_at` text,
	PRIMARY KEY(`import_id`, `position`)
);
--> statement-breakpoint
CREATE TABLE `product_imports` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`shop` text NOT NULL,
	`store_id` integer NOT NULL,
	`provider_base_url` text NOT NULL,
	`file_name` text NOT NULL,
	`digest` text NOT NULL,
	`format` text NOT NULL,
	`source` text NOT NULL,
	`skip_invalid` integer DEFAULT false NOT NULL,
	`force` integer DEFAULT false NOT NULL,
	`status` text NOT NULL,
	`error` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`finished_at` text
);
--> statement-breakpoint
CREATE INDEX `product_imports_shop` ON `product_imports` (`shop`,`id`);