ALTER TABLE "provider_events" ADD COLUMN "redacted_at" text;--> statement-breakpoint
CREATE INDEX "provider_events_received" ON "provider_events" USING btree ("received_at");