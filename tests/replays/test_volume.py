"""Costs at the user's volume, against sums worked out by hand (gpt-4o's catalog prices: $2.50 per million
input tokens, $1.25 cached, $10.00 output), and the one formatter every face reads them with."""

from __future__ import annotations

import pytest

import contextfit
from contextfit import amounts
from contextfit.replays.answer import recommend, recommendation_for
from contextfit.replays.run import replay
from contextfit.replays.volume import ESTIMATED_REPLY_TOKENS, Reply, Volume, reply_of
from contextfit.tokens.models import get_model

M = 1_000_000


def test_gpt_4o_is_priced_as_these_sums_assume():
    prices = get_model("gpt-4o").prices
    assert (prices.input, prices.cached_input, prices.output) == (2.50, 1.25, 10.00)


def test_a_short_chat_costs_what_its_requests_and_replies_cost():
    chat = [{"role": "system", "content": "Be brief."},
            {"role": "user", "content": "My order is ORD-1234."}, {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": "Where is ORD-1234?"}, {"role": "assistant", "content": "In transit."}]
    result = replay(chat, model="gpt-4o", strategies=["truncate"])
    rows = result.turns["truncate"]
    assert [(row.prompt_tokens, row.output_tokens) for row in rows] == [(22, 3), (40, 3)]  # the counts it prices
    outcome = result.recommendation.outcome("truncate")
    # each request: its prompt at $2.50/M and its own 3-token reply at $10/M, nothing cached (under 1,024 tokens)
    per_conversation = (22 * 2.50 + 3 * 10.00 + 40 * 2.50 + 3 * 10.00) / M  # 0.000215
    volume = outcome.volume("conversation")
    assert volume.per_conversation == pytest.approx(0.000215) == pytest.approx(per_conversation)
    # the latest request is the chat as it stands (Compare's plan: 47 tokens, the last reply in it), its reply
    # the mean of the chat's two: 3 tokens
    assert contextfit.plan_prompt(chat, model="gpt-4o").prompt_tokens == 47
    assert volume.per_request == pytest.approx((47 * 2.50 + 3 * 10.00) / M) == pytest.approx(0.0001475)
    assert volume.requests == 2 and volume.reply == Reply(3, 2)
    assert volume.per_1000 == pytest.approx(0.215)
    assert volume.per_month == pytest.approx(0.000215 * 1000 * 30)  # $6.45 at 1,000 conversations a day
    assert volume.at(250).per_month == pytest.approx(0.000215 * 250 * 30)
    assert result.recommendation.cost_per_1000_conversations == pytest.approx(0.1475)  # the latest request, as Compare
    assert result.recommend(basis="conversation").cost_per_1000_conversations == pytest.approx(0.215)


def _long_system_chat():
    system = "Rules. " + " ".join(f"rule{i} applies." for i in range(400))
    return [{"role": "system", "content": system}, {"role": "user", "content": "First question?"},
            {"role": "assistant", "content": "First answer."}, {"role": "user", "content": "Second question?"}]


def test_cached_input_is_priced_as_the_provider_bills_it_and_a_missing_reply_is_the_mean_of_the_others():
    result = replay(_long_system_chat(), model="gpt-4o", strategies=["truncate"])
    first, second = result.turns["truncate"]
    assert (first.prompt_tokens, first.output_tokens) == (1616, 3)
    assert (second.prompt_tokens, second.shared_tokens, second.output_tokens) == (1630, 1613, 0)
    # OpenAI caches the shared prefix in 128-token steps past the first 1,024: 1,024 + 128 * 4 = 1,536 of 1,613
    assert second.cache_read == 1536
    outcome = result.recommendation.outcome("truncate")
    # the second request has no reply in the chat: it is priced with the first's, 3 tokens
    second_cost = ((1630 - 1536) * 2.50 + 1536 * 1.25 + 3 * 10.00) / M  # 0.000235 + 0.00192 + 0.00003
    assert outcome.cost_request == pytest.approx(0.002185) == pytest.approx(second_cost)
    first_cost = (1616 * 2.50 + 3 * 10.00) / M  # 0.00407
    assert outcome.volume("conversation").per_conversation == pytest.approx(0.00407 + 0.002185)
    assert outcome.volume("conversation").per_1000 == pytest.approx(6.255) == pytest.approx((first_cost + second_cost) * 1000)
    # the latest request alone (Compare, fit --recommend): the same request, priced the same
    latest = recommendation_for(_long_system_chat(), model="gpt-4o", strategies=["truncate"]).outcome("truncate")
    assert latest.cost_request == pytest.approx(0.002185) and latest.volume("request").per_1000 == pytest.approx(2.185)


def test_a_chat_without_a_reply_is_priced_with_a_stated_estimate():
    plans_only = recommend({"truncate": contextfit.plan_prompt(
        [{"role": "user", "content": "Hello!"}], model="gpt-4o")})
    outcome = plans_only.outcome("truncate")
    assert outcome.reply == Reply(ESTIMATED_REPLY_TOKENS, 0) and outcome.reply.estimated
    assert outcome.reply.text() == "replies: estimated at 300 tokens (the conversation holds no reply)"
    assert outcome.cost_request == pytest.approx((9 * 2.50 + 300 * 10.00) / M)  # a 9-token prompt, uncached
    assert reply_of([0, 120, 80]) == Reply(100, 2)


def test_no_prices_means_no_cost_said_as_much():
    volume = Volume(None, None, 1, Reply(3, 1))
    assert volume.per_1000 is None and volume.per_month is None and volume.text() == "no catalog price"
    with pytest.raises(ValueError, match="conversations a day"):
        volume.at(-1)


def test_money_and_tokens_read_like_money_and_counts():
    assert [amounts.money_short(x) for x in (0.41, 1234.5, 35_000, 2_400_000, 0.0045, 1.8e-06)] == [
        "$0.41", "$1.2K", "$35K", "$2.4M", "$0.0045", "$0.0000018"]
    assert "e-" not in amounts.money(1.8e-06) and amounts.money(1.8e-06) == "$0.000001800"
    assert amounts.window_text(112_000, 128_000) == "112K of 128K tokens, 88%"
    assert amounts.tokens_short(1_796) == "1.8K" and amounts.percent(0.9996) == "99%"
