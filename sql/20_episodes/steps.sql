-- view: steps
-- grain: one row per event of an episode's finished attempt
-- key: run_id, episode_id, step
-- The events of the attempt that reached episode.finished, in order; the base of every
-- per-step view, so a crashed attempt's partial events never count.
CREATE OR REPLACE VIEW steps AS
SELECT ev.run_id, ev.episode_id, ev.attempt, ev.step, ev.seq, ev.ts, ev.type, ev.payload
FROM events ev
JOIN episodes ep
  ON ep.run_id = ev.run_id AND ep.episode_id = ev.episode_id AND ev.attempt = ep.final_attempt
WHERE ev.step IS NOT NULL;
