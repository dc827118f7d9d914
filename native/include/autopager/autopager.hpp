#pragma once
#include "autopager/config.hpp"
#include "autopager/pager.hpp"
#include "autopager/stats.hpp"
#include "autopager/store.hpp"
