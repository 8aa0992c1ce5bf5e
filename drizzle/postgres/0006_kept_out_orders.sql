ALTER TABLE "skipped_test_orders" ADD COLUMN "order_name" text;--> statement-breakpoint
ALTER TABLE "skipped_test_orders" ADD COLUMN "reason" text DEFAULT 'test' NOT NULL;--> statement-breakpoint
CREATE INDEX "skipped_test_orders_name" ON "skipped_test_orders" USING btree ("shop","order_name");