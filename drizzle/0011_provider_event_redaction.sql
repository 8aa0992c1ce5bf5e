ALTER TABLE `provider_events` ADD `redacted_at` text;--> statement-breakpoint
CREATE INDEX `provider_events_received` ON `provider_events` (`received_at`);