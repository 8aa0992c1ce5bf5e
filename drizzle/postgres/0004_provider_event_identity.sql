ALTER TABLE "provider_events" ADD COLUMN "identity" text;--> statement-breakpoint
ALTER TABLE "provider_events" ADD COLUMN "body_sha256" text;--> statement-breakpoint
CREATE UNIQUE INDEX "provider_events_identity" ON "provider_events" USING btree ("provider_base_url","store_id","identity");--> statement-breakpoint
CREATE UNIQUE INDEX "provider_events_body" ON "provider_events" USING btree ("provider_base_url","store_id","body_sha256");