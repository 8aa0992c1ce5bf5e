ALTER TABLE `shops` ADD `access_token_expires_at` text;--> statement-breakpoint
ALTER TABLE `shops` ADD `access_token_refresh_at` text;--> statement-breakpoint
ALTER TABLE `shops` ADD `refresh_token_sealed` text;--> statement-breakpoint
ALTER TABLE `shops` ADD `refresh_token_expires_at` text;