/*
 * learn.c - learned provisioning delays and interruption rates (learn.h).
 */
#include "controller/hub/learn.h"

double sw_learn_provision_s(uint64_t n, double sum_s)
{
    return n > 0 ? sum_s / (double)n : SW_PRIOR_PROVISION_S;
}

double sw_learn_interrupt_rate(uint64_t interruptions, double hours)
{
    if (hours < 0)
        hours = 0;
    return ((double)interruptions + SW_PRIOR_SPOT_INTERRUPT * SW_PRIOR_INTERRUPT_HOURS) /
           (hours + SW_PRIOR_INTERRUPT_HOURS);
}
