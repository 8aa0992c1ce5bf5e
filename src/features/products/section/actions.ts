import type { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { formText, type SectionKit } from "../../../server/settings/sections/section.ts";
import type { Env, SettingsRouteDeps } from "../../../server/settings/settings-guard.tsx";

/** A product file: size-capped before it is read, checked at once, imported by the workers. */
export function catalogActions(app: Hono<Env>, kit: SectionKit, deps: SettingsRouteDeps) {
  const { service, shops } = deps;
  const { refuse } = kit;
  const maxBytes = service.catalogImports?.maxBytes ?? 0;
  const tooLarge = `The file is larger than ${Math.round(maxBytes / 1024 / 1024)} MB: split it into smaller files.`;
  app.post(
    "/catalog",
    bodyLimit({
      // The multipart envelope around the file.
      maxSize: maxBytes + 64 * 1024,
      onError: (c) => refuse(c, tooLarge, { status: 413 }),
    }),
    async (c) => {
      const imports = service.catalogImports;
      if (!imports) return refuse(c, "Importing products is not available.");
      const body = await c.req.parseBody();
      const file = body.file;
      if (!(file instanceof File) || file.size === 0 || file.name === "") {
        return refuse(c, "Choose a .csv or a .json file to upload.", { field: "catalog-file" });
      }
      if (file.size > maxBytes) return refuse(c, tooLarge, { status: 413 });
      const shop = (await shops.getShop(c.get("shop").shop)) ?? c.get("shop");
      const result = await imports.upload(shop, {
        name: file.name,
        text: await file.text(),
        skipInvalid: formText(body.skipInvalid) === "on",
      });
      if (!result.ok) {
        // The file's type or its lack of products: the file field is what to change.
        return refuse(c, result.message, result.field ? { field: "catalog-file" } : {});
      }
      if (result.view.status === "rejected") {
        return refuse(
          c,
          "Nothing was imported: fix the rows listed below and upload the file again, or tick “Import the good products and leave out the bad ones”.",
        );
      }
      return kit.saved(c, "catalog");
    },
  );
}
