import type { Core } from "../../app/connector.ts";
import { ConfigError } from "../../config/env.ts";
import type { ProviderClients } from "../../engine/provider-clients.ts";
import type { ProviderClient } from "../../provider/index.ts";
import { readCatalogIndex } from "../../shopify/catalog-index.ts";
import type { ShopRecord } from "../../store/index.ts";
import {
  type ImportTarget,
  ProductImporter,
  ProductImportRepository,
  type ProductSpace,
} from "./index.ts";

/** Products outside Shopify: the import record, the importer and each shop's provider side. */
export interface ProductsKit {
  imports: ProductImportRepository;
  importer: ProductImporter;
  /** The shop's provider store and client; a shop without a store is a configuration error. */
  spaceOf(shop: ShopRecord): { space: ProductSpace; client: ProviderClient };
  /** What an import of this shop sends to, and the Shopify catalog it is checked against. */
  targetFor(shop: ShopRecord): ImportTarget;
}

export function createProducts(
  core: Core,
  providers: Pick<ProviderClients, "for">,
  options: {
    /** Whether a provider is known for this shop (its own settings, the environment, npm start). */
    endpointsKnown?: (shop: ShopRecord) => boolean;
    /** The error when none is. */
    noEndpoints?: () => Error;
  } = {},
): ProductsKit {
  const imports = new ProductImportRepository(core.db);
  const importer = new ProductImporter({
    imports,
    limiter: core.limiter,
    redis: core.redis,
    prefix: core.prefix,
    logger: core.logger.child({ component: "products" }),
  });
  const spaceOf = (shop: ShopRecord) => {
    if (shop.storeId === null) {
      throw new ConfigError(
        `shop ${shop.shop} has no provider store: set it with \`connector shops update --shop ${shop.shop} --store-id N\``,
      );
    }
    if (options.endpointsKnown && !options.endpointsKnown(shop)) {
      throw options.noEndpoints?.() ?? new ConfigError("no provider is configured for this shop");
    }
    const client = providers.for(shop);
    return {
      client,
      space: { shop: shop.shop, storeId: shop.storeId, providerBaseUrl: client.baseUrl },
    };
  };
  return {
    imports,
    importer,
    spaceOf,
    targetFor(shop) {
      const { space, client } = spaceOf(shop);
      return {
        space,
        client,
        readShopifyCatalog: () => readCatalogIndex(core.shopifyAdmin.for(shop)),
      };
    },
  };
}
