/*
 * learn.h - what the hub learns of a cloud pool from what it saw, and the
 * priors it uses until then. Pure: counts in, figures out.
 */
#ifndef SW_CONTROLLER_HUB_LEARN_H
#define SW_CONTROLLER_HUB_LEARN_H

#include <stdint.h>

/* Priors: what the hub assumes until it has seen better (docs/hub.md). */
#define SW_PRIOR_PROVISION_S     60.0 /* a cloud node added */
#define SW_PRIOR_SPOT_INTERRUPT  0.1  /* spot interruptions per hour of running */
#define SW_PRIOR_INTERRUPT_HOURS 10.0 /* the hours of running that prior weighs as */

/**
 * The provisioning delay to give the engine: the mean of the `n` delays seen
 * (their sum `sum_s`, seconds), or the prior when none was seen.
 */
double sw_learn_provision_s(uint64_t n, double sum_s);

/**
 * A spot pool's interruption rate per hour of running: (interruptions +
 * prior x H) / (hours + H), H = SW_PRIOR_INTERRUPT_HOURS, so the prior
 * rules while little was seen and what was seen takes over as hours add up.
 */
double sw_learn_interrupt_rate(uint64_t interruptions, double hours);

#endif
