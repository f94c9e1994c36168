-- Provider prompt caching (DESIGN.md §4): the 1-hour part of the cache
-- writes, the net saving of the prompt cache, the cause and size of a break
-- in prefix reuse, and whether warm-then-fan-out held the call.
ALTER TABLE ledger
    ADD COLUMN cache_write_1h_tokens    bigint  NOT NULL DEFAULT 0,
    ADD COLUMN prompt_cache_saved       bigint  NOT NULL DEFAULT 0,
    ADD COLUMN prompt_cache_break       text    NOT NULL DEFAULT '',
    ADD COLUMN prompt_cache_lost_tokens bigint  NOT NULL DEFAULT 0,
    ADD COLUMN fan_out_held             boolean NOT NULL DEFAULT false;
-- Rows written before this migration never computed their saving: with cache
-- tokens it is unknown (-1, groundhog.CostUnknown), never a silent 0.
UPDATE ledger SET prompt_cache_saved = -1
    WHERE cached_input_tokens <> 0 OR cache_write_tokens <> 0;
